"""Adapters that let other RL libraries train and evaluate on the CVDP environments.

One module per library, each imported only when used (the library itself is an optional
extra of this package):

- ``cvdp_gym.integrations.tinker_cookbook``: ``Env``, ``EnvGroupBuilder``, ``RLDataset`` and
  an ``RLDatasetBuilder`` for ``tinker_cookbook.rl.train`` (extra ``tinker-cookbook``).
- ``cvdp_gym.integrations.trl``: reward functions, a prompt dataset and a tool environment
  for TRL's ``GRPOTrainer`` (extra ``trl``).
- ``cvdp_gym.integrations.verifiers``: ``load_environment()`` and a ``verifiers.v1`` taskset
  whose rewards are the staged grader's (extra ``verifiers``).
- ``cvdp_gym.integrations.skyrl``: a ``skyrl_gym`` text env (``cvdp_gym``, ``cvdp_gym_refine``,
  ``cvdp_gym_agentic``), ``register()`` and a prompt-dataset writer for SkyRL (extra ``skyrl``).
- ``cvdp_gym.integrations.openenv``: the environments served as an OpenEnv environment
  (``make_app``, ``CVDPEnvironment``) and its typed client ``CVDPEnvClient`` (extra ``openenv``).
- ``cvdp_gym.integrations.verl``: veRL's ``compute_score`` (in process or through
  ``cvdp-gym serve``), its Parquet rows, and an agent loop for the agentic environment
  (extra ``verl``).
- ``cvdp_gym.integrations.harbor``: problems written as Harbor task folders whose
  ``tests/test.sh`` grades with the grader inside the task's container (``cvdp_gym.sandbox.container``:
  its sandbox there); ``cvdp-gym export harbor``. Harbor itself is not imported.

They use only the package's public API: the Gymnasium environments, their documented
``info`` keys, and ``Grader``.
"""
