"""The training sets graded against their references (issue 29): CodeV-R1, VeriThoughts, RTLCoder
and a generic reference set (:mod:`.data`: their layouts). They share the ``reference`` flow
(:mod:`cvdp_gym.equivalence.flow`) and :class:`cvdp_gym.data.benchmarks.training.TrainingSet`.
"""
