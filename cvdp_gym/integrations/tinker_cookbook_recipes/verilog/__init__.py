"""Verilog RTL: RL and on-policy distillation on CVDP problems (see README.md here)."""
