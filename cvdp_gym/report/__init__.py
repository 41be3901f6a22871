"""``cvdp-gym report``: a static HTML report of one or more eval run folders.

:mod:`.stats` reads a run back and computes its numbers (:mod:`.domains`: design domains), :mod:`.plots` draws its figures,
:mod:`.pages` writes the per-problem and per-episode pages, :mod:`.html` the index.
"""

from __future__ import annotations

from cvdp_gym.report.html import SECTIONS, write_html_report

__all__ = ["SECTIONS", "write_html_report"]
