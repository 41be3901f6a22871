"""The built-in benchmark plug-ins, one package each (:mod:`cvdp_gym.plugins` says what a plug-in
holds and how third-party ones are found).

- :mod:`.verilog_eval_v2`: VerilogEval v2 (spec-to-RTL, code completion);
- :mod:`.verilog_eval_v1`: VerilogEval v1 (Human, Machine);
- :mod:`.rtllm`: RTLLM v2.0 and v1.1;
- :mod:`.chipbench`: ChipBench (Verilog generation and debugging, a VerilogEval v2 fork);
- :mod:`.training`: the training sets graded against their references (CodeV-R1, VeriThoughts,
  RTLCoder, a generic reference set).

A package's ``__init__`` holds nothing but its docstring: each layer imports only the part it
owns (``data``, ``answers``, ``flow``, ``official``, ``report``), when it first needs it.
"""
