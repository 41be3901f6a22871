"""VerilogEval v1 (NVlabs/verilog-eval ``release/1.0.0``): Human (156) and Machine (143).

Parts: :mod:`.data` (pin, loader, prompts), :mod:`.answers` (a completion after the prompt's
header), :mod:`.flow` (``execution.py``'s rule on Icarus 12), :mod:`.official` (the clone's own
``check_correctness`` for ``parity``), :mod:`.report` (``evaluate_functional_correctness``'s pass@k),
``published.json`` (CodeV-R1's and OriGen's figures).
"""
