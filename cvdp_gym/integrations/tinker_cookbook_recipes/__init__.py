"""tinker-cookbook recipes over CVDP, laid out as the cookbook's own ``recipes`` folder.

Each recipe is a module run with ``python -m``; its ``CLIConfig`` is a chz config
(``key=value`` arguments). ``verilog``: RL (``train``) and on-policy distillation
(``on_policy_distillation``) on the cookbook's own loops, through
:mod:`cvdp_gym.integrations.tinker_cookbook`.
"""
