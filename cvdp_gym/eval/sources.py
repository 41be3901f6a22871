"""Where answers come from: a JSONL file of responses, or an OpenAI-compatible chat endpoint.

The endpoint client lives in :mod:`cvdp_gym.chat` (the grading layer's judge uses it too);
it is re-exported here, where ``eval`` has always imported it from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.chat import ChatClient, ChatSettings, Completion, parse_choices
from cvdp_gym.errors import RequestFailed, ResponsesFileError
from cvdp_gym.jsonl import JsonlError, iter_json

__all__ = [
    "ChatClient",
    "ChatSettings",
    "Completion",
    "RequestFailed",
    "Response",
    "ResponsesFileError",
    "parse_choices",
    "read_responses",
]


@dataclass(frozen=True)
class Response:
    """One answer to a problem, as read from a responses file."""

    id: str
    sample: int
    text: str
    line: int


def _parse_line(item: Any, where: str) -> tuple[str, int | None, str]:
    """Check one parsed line's shape: ``{"id": str, "response": str, "sample"?: int >= 0}``, or
    VerilogEval v1's own samples line, ``{"task_id": str, "completion": str}``."""
    if not isinstance(item, dict):
        raise ResponsesFileError(f"{where}: expected a JSON object, got {type(item).__name__}")
    if "id" not in item and "task_id" in item and "completion" in item:
        item = {"id": item["task_id"], "response": item["completion"], "sample": item.get("sample")}
    pid, text, sample = item.get("id"), item.get("response"), item.get("sample")
    if not isinstance(pid, str) or not pid:
        raise ResponsesFileError(f"{where}: needs a string 'id'")
    if not isinstance(text, str):
        raise ResponsesFileError(f"{where}: needs a string 'response'")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 0):
        raise ResponsesFileError(f"{where}: 'sample' must be a non-negative integer, got {sample!r}")
    return pid, sample, text


def read_responses(path: str | Path) -> list[Response]:
    """Lines ``{"id", "response", "sample"?}`` (or ``{"task_id", "completion"}``); without
    ``sample``, numbered in file order per id."""
    out: list[Response] = []
    seen: dict[tuple[str, int], int] = {}
    per_id: dict[str, int] = {}
    try:
        lines = list(iter_json(path))
    except JsonlError as exc:  # missing, binary, not UTF-8, malformed JSON: file and line
        raise ResponsesFileError(str(exc)) from None
    for number, item in lines:
        pid, sample, text = _parse_line(item, f"{path}:{number}")
        if sample is None:
            sample = per_id.get(pid, 0)
        per_id[pid] = per_id.get(pid, 0) + 1
        first = seen.setdefault((pid, sample), number)
        if first != number:
            raise ResponsesFileError(f"{path}:{number}: sample {sample} of {pid} already given on line {first}")
        out.append(Response(pid, sample, text, number))
    return out
