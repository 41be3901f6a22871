"""rtl_trainer: RL and on-policy distillation of RTL-writing language models over cvdp_gym."""

__version__ = "0.1.0"
