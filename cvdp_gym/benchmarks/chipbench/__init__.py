"""ChipBench (zhongkaiyu/ChipBench, MIT, 2026): Verilog generation (self-contained, not
self-contained, CPU IP) and debugging (zero- and one-shot: assignment, timing, arithmetic, state
machine), scored by VerilogEval v2's ``sv-iv-analyze``.

Parts: :mod:`.data` (pin, loader, prompts, reference answers, known defects), :mod:`.answers`
and :mod:`.flow` (VerilogEval v2's, under ChipBench's name), :mod:`.official` (the clone's own
configure + Makefile + ``sv-iv-analyze`` for ``parity``), :mod:`.report` (``sv-iv-analyze``'s
arithmetic), ``published.json`` (the paper's figures).
"""
