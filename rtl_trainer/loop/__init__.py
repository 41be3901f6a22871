"""The training loops and what they need around them, one concern a module.

``train`` (RL and on-policy distillation, ``Trainer``), ``objective`` (a step's groups
as datums), ``stream`` (streaming minibatches), ``sft`` (supervised warm start),
``evaluate`` (pass@k through the environments), ``envs`` (environment factory, problem
selection, sampling parameters), ``curriculum`` (which problems a step draws), ``metrics``
(per-step metrics of groups and rollouts), ``runlog`` (the run directory's JSONL logs).

Nothing is imported here: ``import rtl_trainer.loop.runlog`` stays cheap (no torch, no
environments); import the module you need.
"""
