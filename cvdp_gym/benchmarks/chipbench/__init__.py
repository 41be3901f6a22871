"""ChipBench (zhongkaiyu/ChipBench, MIT, 2026): Verilog generation (self-contained, not
self-contained, CPU IP) and debugging (zero- and one-shot: assignment, timing, arithmetic, state
machine), scored by VerilogEval v2's ``sv-iv-analyze``.

Parts: :mod:`.data` (pin, loader, prompts, reference answers, known defects), :mod:`.answers`
and :mod:`.flow` (VerilogEval v2's, under ChipBench's name), :mod:`.official` (the clone's own
configure + Makefile + ``sv-iv-analyze`` for ``parity``), :mod:`.report` (``sv-iv-analyze``'s
arithmetic). It publishes no figures yet (its repository has none; the paper's tables were not
reachable), so it has no ``published.json``: one added here is read by :mod:`cvdp_gym.eval.published`.
"""
