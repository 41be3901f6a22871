"""The report of a real ``cvdp-gym eval --refine`` run: transcript pages from real transcripts.

The answerer is the scripted ``stubborn`` one of ``test_eval_refine`` behind a real local
HTTP server: every answer has the same syntax error, so each episode is two compile-only
attempts with real feedback, and its transcript is what eval writes.
"""

from __future__ import annotations

import json

import pytest

from cvdp_gym.report import write_html_report
from tests.cvdp_gym.eval.test_eval_refine import ScriptedAnswerers, run_eval
from tests.support import check_links, serve_chat

pytestmark = pytest.mark.sandbox


def test_refine_transcripts_get_pages_that_link_back(toolchain, tmp_path):
    server = ScriptedAnswerers()
    out = tmp_path / "run"
    with serve_chat(server.reply) as base_url:
        run_eval(base_url, "stubborn", out, "--refine", "2", "--feedback", "compile", "-n", "2", "--cache", str(tmp_path / "c.sqlite"))
    assert not server.slips, server.slips
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r.get("transcript") and (out / r["transcript"]).is_file() for r in rows)
    html = tmp_path / "html"
    write_html_report([out], html)
    pid = rows[0]["id"]
    pages = sorted((html / "run1" / "transcripts").glob("*.html"))
    assert [p.name for p in pages] == [f"{pid}.0.html", f"{pid}.1.html"]
    text = pages[0].read_text()
    assert 'href="../../index.html"' in text and f'href="../problems/{pid}.html"' in text
    assert "attempt 1: build_error" in text and "The design does not compile" in text  # the real feedback
    problem = (html / "run1" / "problems" / f"{pid}.html").read_text()
    assert f'href="../transcripts/{pid}.0.html"' in problem and f'href="../transcripts/{pid}.1.html"' in problem
    index = (html / "index.html").read_text()
    assert f'href="run1/transcripts/{pid}.0.html"' in index and "episode wall time" in index
    assert check_links(html) == 1 + 1 + len(pages)
