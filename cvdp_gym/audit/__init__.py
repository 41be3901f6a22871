"""``cvdp-gym audit``: how many seeded wrong answers each problem's own test bench catches.

:mod:`.run` makes the mutants and grades them (the test bench, then the equivalence grader on
the survivors), incrementally; :mod:`.report` turns the runs into each problem's kill rate and
each benchmark's distribution, as JSON, Markdown and HTML.
"""

from __future__ import annotations

from cvdp_gym.audit.report import summarize, tables, write_reports
from cvdp_gym.audit.run import RESULTS, Audited, Subject, plan, run_audit

__all__ = ["RESULTS", "Audited", "Subject", "plan", "run_audit", "summarize", "tables", "write_reports"]
