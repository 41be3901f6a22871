"""VerilogEval v2 (NVlabs/verilog-eval): spec-to-RTL and code completion, 156 problems each.

Parts: :mod:`.data` (pin, loader, prompts as ``sv-generate`` builds them, known defects),
:mod:`.answers` (extraction as ``sv-generate`` writes a sample file), :mod:`.flow` (one answer as
the Makefile and ``sv-iv-analyze`` run and judge it), :mod:`.official` (the clone's own configure +
Makefile + ``sv-iv-analyze`` for ``parity``), :mod:`.report` (``sv-iv-analyze``'s arithmetic),
``published.json`` (the paper's and CodeV-R1's figures).
"""
