"""The verification tasks: a design problem posed as a test-bench or an assertion task, and graded
on the reference and seeded bugs.

One room per part: :mod:`.posing` (the one posing path: ``TaskOptions``, ``pose``, and the
``#TASK`` fragment's table), :mod:`.prompts` (what the model reads), :mod:`.design` (the design
under test), :mod:`.names` (the tasks' and their files' names), :mod:`.mutants` (the seeded
bugs), :mod:`.flow` (their flows, read by the flow table by name), the bench's rules, verdicts
and runs (Verilog and cocotb), :mod:`.coverage` and :mod:`.assertions`."""
