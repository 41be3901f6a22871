"""Fuzzing the grading routes of a real ``cvdp-gym serve`` (uvicorn on 127.0.0.1, a token
set): every malformed, mistyped, incomplete, unknown, oversized, unauthorised, random or
deeply nested request is a 4xx with a JSON ``detail``, never a 5xx; nothing is graded;
and the server still answers ``/healthz``. Seeded, a few hundred requests, seconds."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx

from tests.cvdp_gym.service.test_service import DATA, EDGE, serve

pytestmark = pytest.mark.sandbox

SEED = 20261125
TOKEN = "s3cret"
MAX_BODY = 64 * 1024
ROUTES = ("/v1/grade", "/verify", "/seed_session", "/aggregate_metrics")

#: A valid body per route: every case below breaks it so that it can no longer be graded.
VALID: dict[str, dict[str, Any]] = {
    "/v1/grade": {"problem_id": EDGE.id, "files": EDGE.reference},
    "/verify": {
        "responses_create_params": {"input": [{"role": "user", "content": "Write it."}]},
        "response": {"id": "resp_1", "output": [{"type": "message", "role": "assistant",
                                                 "content": [{"type": "output_text", "text": "```verilog\n```"}]}]},
        "verifier_metadata": {"problem_id": EDGE.id},
    },
    "/seed_session": {},
    "/aggregate_metrics": {"verify_responses": [{"reward": 1.0, "passed": True, "verifier_metadata": {"problem_id": EDGE.id}}]},
}

#: Per route: (a field path, values of a wrong type or out of range for it).
WRONG: dict[str, list[tuple[tuple[str, ...], list[Any]]]] = {
    "/v1/grade": [
        (("problem_id",), [1, 1.5, True, None, [], {}, ["x"], "", "x" * 501]),
        (("files",), [["rtl/x.sv"], "text", 5, True, {"rtl/x.sv": 1}, {"rtl/x.sv": None}, {"rtl/x.sv": ["x"]}]),
        (("reward",), ["nope", 5, [], "SHAPED"]),  # None is the server's default
        (("deadline_s",), [-1, 0, "soon", [], {}]),
        (("seed",), ["x", 1.5, -1, 2**40, [], {}]),
        (("extra_field",), [1, "x", None]),
    ],
    "/verify": [
        (("responses_create_params",), [[], "x", 5, None, True]),
        (("response",), [[], "x", 5, None, True]),
        (("verifier_metadata",), ["x", 5, [], None, {}, {"problem_id": 5}, {"problem_id": ""},
                                  {"problem_id": EDGE.id, "rtl_files": ["x"]}, {"problem_id": EDGE.id, "rtl_files": {"a": 1}},
                                  {"problem_id": EDGE.id, "reward": "nope"}, {"problem_id": EDGE.id, "deadline_s": -1}]),
    ],
    "/seed_session": [((), [[], "x", 5, True, 1.5, [{}]])],
    "/aggregate_metrics": [
        (("verify_responses",), ["x", 5, {}, None, [1], ["x"], [None], [{"reward": "abc"}], [{"reward": [1]}], [{}],
                                 [{"reward": 1, "passed": "maybe"}], [{"reward": 1, "verifier_metadata": "s"}],
                                 [{"reward": 1, "problem_id": [1]}]]),
    ],
}

#: A typed field per route, where a nested list is always of the wrong type.
TYPED: dict[str, tuple[str, ...]] = {
    "/v1/grade": ("problem_id",), "/verify": ("verifier_metadata", "problem_id"), "/seed_session": (),
    "/aggregate_metrics": ("verify_responses",),
}

#: Required fields, and the grading answer one needs of two (missing both: 422).
REQUIRED: dict[str, list[tuple[str, ...]]] = {
    "/v1/grade": [("problem_id",), ("files",)],
    "/verify": [("responses_create_params",), ("response",), ("verifier_metadata",), ("verifier_metadata", "problem_id")],
    "/aggregate_metrics": [("verify_responses",)],
}

#: Characters for unknown problem ids: ASCII, Latin-1, Greek, CJK, right-to-left, emoji,
#: combining marks, NUL and controls, path-like punctuation.
ALPHABET = [*"abc_0123456789-./\\ '\"%$", "é", "ß", "Ω", "中", "文", "ע", "ب", "😀", "🧪", "\u0301", "\u200b", "\x00", "\x1b", "\n"]


@dataclass
class Case:
    kind: str
    route: str
    content: bytes | Iterator[bytes]
    headers: dict[str, str | bytes]


def set_path(body: Any, path: tuple[str, ...], value: Any) -> Any:
    if not path:
        return value
    body = json.loads(json.dumps(body))
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


def drop_path(body: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    body = json.loads(json.dumps(body))
    node = body
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return body


def unknown_id(rng: random.Random) -> str:
    while True:
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40)))
        if text not in DATA.ids:
            return text


def nested(rng: random.Random, depth: int, objects: bool = True) -> bytes:
    """Nested arrays (or, with ``objects``, maybe nested objects: a valid ``/seed_session``)."""
    if not objects or rng.random() < 0.5:
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def random_bytes(rng: random.Random) -> bytes:
    while True:
        raw = rng.randbytes(rng.randint(1, 2000))
        try:
            json.loads(raw)
        except ValueError:
            return raw


def cases(rng: random.Random) -> Iterator[Case]:
    """The requests, by kind; each route gets every kind."""
    auth = {"authorization": f"Bearer {TOKEN}"}
    as_json = {**auth, "content-type": "application/json"}

    def body(route: str, value: Any) -> Case:
        return Case("", route, json.dumps(value).encode(), as_json)

    for route in ROUTES:
        valid = json.dumps(VALID[route]).encode()
        yield from _kind("malformed", [
            Case("", route, valid[: rng.randint(1, len(valid) - 1)], as_json) for _ in range(8)
        ] + [Case("", route, valid + junk, as_json) for junk in (b"}", b",", b"]]", b" x", b"\x00")])
        for path, values in WRONG[route]:
            yield from _kind("wrong type", [body(route, set_path(VALID[route], path, v)) for v in values])
        yield from _kind("missing field", [body(route, drop_path(VALID[route], p)) for p in REQUIRED.get(route, [])])
        if route in ("/v1/grade", "/verify"):
            path = ("problem_id",) if route == "/v1/grade" else ("verifier_metadata", "problem_id")
            yield from _kind("unknown id", [body(route, set_path(VALID[route], path, unknown_id(rng))) for _ in range(15)])
        yield from _kind("random bytes", [Case("", route, random_bytes(rng), as_json) for _ in range(10)]
                         + [Case("", route, random_bytes(rng), auth) for _ in range(3)])
        yield from _kind("huge", [
            Case("", route, valid[:-1] + b', "pad": "' + b"x" * (MAX_BODY + rng.randint(0, 9999)) + b'"}', as_json),
            Case("", route, _chunked(valid, MAX_BODY + rng.randint(1, 9999)), as_json),
            Case("", route, b"[" * (MAX_BODY + 1), as_json),
        ])
        yield from _kind("token", [
            Case("", route, valid, {"content-type": "application/json", **headers})  # type: ignore[dict-item]
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": f"bearer {TOKEN}"},
                            {"authorization": TOKEN}, {"authorization": f"Bearer {TOKEN}x"}, {"authorization": "Bearer"},
                            {"authorization": f"Basic {TOKEN}"}, {"authorization": "Bearer \u00e9\u00e9".encode("latin-1")})
        ])
        yield from _kind("deeply nested", [Case("", route, nested(rng, rng.choice([100, 1000, 5000, 20000]), route != "/seed_session"), as_json) for _ in range(4)]
                         + [body(route, set_path(VALID[route], TYPED[route], _deep(depth))) for depth in (50, 300, 600, 900)])
        yield from _kind("not JSON values", [
            Case("", route, raw, as_json) for raw in (
                _extend(valid, b'"x": NaN'), _extend(valid, b'"x": -Infinity'), _extend(valid, b'"x": "\\ud800"'),
                _extend(valid, b'"x": "\\udfff\\ud800"'), b'{"problem_id": "\\ud83d"}',
            )
        ])
        yield from _kind("content type", [
            Case("", route, b'["x"]', {**auth, "content-type": "text/plain"}),
            Case("", route, b"\xff\xfe\x00{", {**auth, "content-type": "text/plain; charset=utf-8"}),
            Case("", route, b'"x"', auth),
        ])


def _extend(valid: bytes, member: bytes) -> bytes:
    """``valid`` (a JSON object) with one more member."""
    return valid[:-1] + (b", " if valid != b"{}" else b"") + member + b"}"


def _kind(kind: str, items: list[Case]) -> Iterator[Case]:
    for case in items:
        case.kind = kind
        yield case


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _chunked(valid: bytes, size: int) -> Iterator[bytes]:
    """A body over the limit, sent without a content-length."""
    yield valid[:-1] + b', "pad": "'
    for _ in range(size // 4096 + 1):
        yield b"y" * 4096
    yield b'"}'


#: The /metrics lines that move when an answer is graded.
GRADING = re.compile(r"cvdp_gym_(grades_total|cache_hits_total|cache_misses_total|grade_seconds_count)\b")


@pytest.fixture(scope="module")
def guarded(runner, tmp_path_factory):
    server = serve(runner, tmp_path_factory.mktemp("fuzz"), token=TOKEN, max_body=MAX_BODY, workers=1, queue=1)
    yield server
    server.stop()


def test_fuzzed_requests_are_4xx_with_a_json_error_and_grade_nothing(guarded):
    rng = random.Random(SEED)
    with httpx.Client(base_url=guarded.url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
        before = [line for line in client.get("/metrics").text.splitlines() if GRADING.match(line)]
        seen: dict[str, set[int]] = {}
        wrong: list[str] = []
        for n, case in enumerate(cases(rng)):
            reply = httpx.post(f"{guarded.url}{case.route}", content=case.content, headers=case.headers, timeout=30)
            seen.setdefault(case.kind, set()).add(reply.status_code)
            try:
                detail = reply.json()["detail"]
            except (ValueError, KeyError, TypeError):
                detail = None
            if not 400 <= reply.status_code < 500 or not detail or "application/json" not in reply.headers.get("content-type", ""):
                wrong.append(f"#{n} {case.kind} {case.route}: {reply.status_code} {reply.text[:200]!r}")
        assert not wrong, "\n".join(wrong)
        assert n + 1 >= 300, n
        assert seen["token"] == {401} and seen["huge"] == {413} and seen["unknown id"] <= {404, 422}
        assert seen["not JSON values"] == {400} and seen["wrong type"] <= {422}
        # Nothing was graded, nothing is running, nothing answered 5xx, and the server is fine.
        after = client.get("/metrics").text
        assert [line for line in after.splitlines() if GRADING.match(line)] == before
        assert "cvdp_gym_grading_in_progress 0" in after and not re.search(r'status="5\d\d"', after)
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"
