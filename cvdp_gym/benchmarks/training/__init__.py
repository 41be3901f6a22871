"""The training sets graded against their references (issue 29): CodeV-R1, VeriThoughts, RTLCoder
and a generic reference set (:mod:`.data`: their layouts), all of them here: what they share
(:mod:`.training_set`: ``TrainingSet``, the ``Benchmark`` the host calls), the rows of their
files (:mod:`.rows`: JSONL, JSON, Parquet) and CodeV-R1's pickles read as plain data only
(:mod:`.plain_pickle`). They are graded by the ``reference`` flow (:mod:`cvdp_gym.equivalence.flow`).
"""
