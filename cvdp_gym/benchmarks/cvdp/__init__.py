"""CVDP (NVlabs/cvdp_benchmark, nvidia/cvdp-benchmark-dataset): the main benchmark, cocotb harnesses
in Docker Compose services, comprehension problems scored by BLEU/ROUGE or an LLM judge.

Parts: :mod:`.data` (its dataset specs: ``bundled``, ``hf[:PATTERN[@REV]]``, CVDP JSONL files;
``DATASET_SOURCES``), :mod:`.report` (the official CVDP report's table: biased pass@k for harness
categories, mean credit for score ones; ``OFFICIAL_TABLES``), :mod:`.official` (a user's clone of
the official runner in Docker on the answers, for ``parity``; ``OFFICIAL_RUNNERS``). What the other
benchmarks share stays in :mod:`cvdp_gym.data`: CVDP's record shapes are the ``Problem`` model's
(:mod:`cvdp_gym.data.problems`), the Hugging Face download serves the training sets too
(:mod:`cvdp_gym.data.hub`), the bundled set is read by ``check``, ``parity`` and the trainer
(:mod:`cvdp_gym.data.bundle`). No ``flow`` part: its harnesses run on
:class:`cvdp_gym.harness.runner.HarnessRunner`'s own compose path. It publishes no figures.
"""
