"""Assertion generation: a model's SVA properties checked by open formal (Yosys 0.40).

- ``sva``: the supported SVA subset lowered to immediate assertions (``lower_properties``);
- ``ports_only``: the answer may read the design's ports only (``outside_names``, pyslang,
  before anything runs) and the header the prompt shows (``ports_interface``);
- ``check``: each property checked on the reference and on mutants in the sandbox
  (``check_properties``), with vacuity probes on the reference.
"""

from cvdp_gym.tasks.assertions.check import PropertyReport, PropertyResult, check_properties
from cvdp_gym.tasks.assertions.sva import Lowered, Property, lower_properties

__all__ = ["Lowered", "Property", "PropertyReport", "PropertyResult", "check_properties", "lower_properties"]
