"""The verification tasks: a design problem posed as a test-bench or an assertion task, and graded
on the reference and seeded bugs (:mod:`.flow`: their flows, read by the flow table by name)."""
