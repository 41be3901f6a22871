"""RTLLM v2.0 (50 designs) and v1.1 (29) (hkust-zhiyao/RTLLM).

Parts: :mod:`.data` (pins, loader, defects), :mod:`.flow` (one answer as ``auto_run.py`` runs it,
Icarus standing in for VCS; :mod:`.xguard`: an answer that leaves its outputs X is checked against
the reference), :mod:`.official` (the clone's own ``auto_run.py`` for ``parity``), :mod:`.report`
(``cal_atk``'s arithmetic, its appended 0 and its quirks), ``published.json`` (CodeV-R1's figures).
Answers are the design file (no part: the shared extraction).
"""
