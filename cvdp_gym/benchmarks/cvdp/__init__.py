"""CVDP (NVlabs/cvdp_benchmark, nvidia/cvdp-benchmark-dataset): the main benchmark, cocotb harnesses
in Docker Compose services, comprehension problems scored by BLEU/ROUGE or an LLM judge.

Parts: :mod:`.report` (the official CVDP report's table: biased pass@k for harness categories, mean
credit for score ones, ``OFFICIAL_TABLES``), :mod:`.official` (a user's clone of the official
runner in Docker on the answers, for ``parity``: ``OFFICIAL_RUNNERS``). No ``data`` part: CVDP's
datasets are :func:`cvdp_gym.data.load_dataset`'s own specs (``bundled``, ``hf[:PATTERN[@REV]]``,
CVDP JSONL files), since its record shapes are the ``Problem`` model's (:mod:`cvdp_gym.data.problems`),
the Hugging Face source is shared with the training sets (:mod:`cvdp_gym.data.hub`) and the bundled
set is public data API (:mod:`cvdp_gym.data.bundle`). No ``flow`` part: its harnesses run on
:class:`cvdp_gym.harness.runner.HarnessRunner`'s own compose path. It publishes no figures here.
"""
