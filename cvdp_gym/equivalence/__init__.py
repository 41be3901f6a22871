"""The reference-equivalence grader: an answer judged by equivalence with the problem's reference
design (:mod:`.flow`, the ``reference`` flow, read by the flow table by name)."""
