"""Loading CVDP records of both shapes, patches, filters, bad input and the hub path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cvdp_gym.data import DatasetError, load_dataset
from cvdp_gym.data.bundle import bundled_candidates, bundled_records, export_jsonl
from cvdp_gym.data.hub import HubUnavailable
from cvdp_gym.data.patch import PatchError, apply_patch, make_patch
from cvdp_gym.data.problems import load_jsonl

COMPOSE = (
    "services:\n  direct:\n    image: __OSS_SIM_IMAGE__\n    volumes:\n      - ./src/:/src/:ro\n"
    "    env_file    : ./src/.env\n    command     : pytest -s /src/test_runner.py -v\n"
)
RTL = "module inv(input a, output y);\n  assign y = ~a;\nendmodule\n"


def nonagentic(pid="cvdp_copilot_inv_0001", cats=("cid003", "easy"), harness=None, reference=RTL):
    return {
        "id": pid,
        "categories": list(cats),
        "input": {"prompt": "Write an inverter.", "context": {"docs/spec.md": "y = ~a"}},
        "output": {"response": "", "context": {"rtl/inv.sv": reference}},
        "harness": {"files": harness or {"docker-compose.yml": COMPOSE, "src/.env": "SIM = icarus\n"}},
    }


def agentic(pid="cvdp_agentic_inv_0001", patch=None):
    # The CVDP shape: hunks only, a file created from an empty one, no final newline.
    hunks = patch if patch is not None else "@@ -0,0 +1,3 @@\n+module inv(input a, output y);\n+  assign y = ~a;\n+endmodule"
    return {
        "id": pid,
        "categories": ["cid004", "medium"],
        "system_message": "You may use ls, cat, iverilog.",
        "prompt": "Fix rtl/inv.sv",
        "context": {"docs/spec.md": "spec"},
        "patch": {"rtl/inv.sv": hunks},
        "harness": {"docker-compose.yml": COMPOSE, "src/.env": "SIM = icarus\n"},
    }


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_both_shapes_load(tmp_path):
    data = load_jsonl(write_jsonl(tmp_path / "d.jsonl", [nonagentic(), agentic()]))
    plain, agent = data.problems
    assert (plain.agentic, plain.category, plain.difficulty) == (False, "cid003", "easy")
    assert plain.targets == ("rtl/inv.sv",) and plain.reference == {"rtl/inv.sv": RTL}
    assert plain.context == {"docs/spec.md": "y = ~a"} and "docker-compose.yml" in plain.harness
    assert agent.agentic and agent.system_message.startswith("You may")
    assert agent.targets == ("rtl/inv.sv",)
    assert agent.reference == {"rtl/inv.sv": RTL}
    assert plain.source.endswith("d.jsonl:1") and agent.source.endswith("d.jsonl:2")


def test_public_release_without_solutions_has_no_reference(tmp_path):
    data = load_jsonl(write_jsonl(tmp_path / "d.jsonl", [nonagentic(reference=""), agentic(patch="")]))
    assert [p.reference for p in data] == [None, None]
    assert [p.targets for p in data] == [("rtl/inv.sv",), ("rtl/inv.sv",)]


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(nonagentic()) + "\n{not json\n")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2: malformed JSON"):
        load_jsonl(path)
    with pytest.warns(UserWarning, match=r"bad\.jsonl:2"):
        data = load_jsonl(path, lenient=True)
    assert data.ids == ["cvdp_copilot_inv_0001"]


def test_record_of_wrong_shape_is_an_error_naming_the_line(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [nonagentic(), {"id": "x", "categories": ["cid003"]}])
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: x: neither"):
        load_jsonl(path)
    with pytest.warns(UserWarning):
        data = load_jsonl(path, lenient=True)
    assert [s.id for s in data.skipped] == ["x"]


def test_filters_and_commercial_skip(tmp_path):
    records = [
        nonagentic("cvdp_copilot_a_0001", ("cid003", "easy")),
        nonagentic("cvdp_copilot_b_0001", ("cid002", "hard")),
        nonagentic("cvdp_copilot_c_0001", ("cid012", "easy")),
        nonagentic("cvdp_copilot_d_0001", ("cid003", "medium"), harness={"docker-compose.yml": "services:\n  x:\n    image: __VERIF_EDA_IMAGE__\n"}),
    ]
    path = write_jsonl(tmp_path / "d.jsonl", records)
    data = load_jsonl(path)
    assert data.ids == ["cvdp_copilot_a_0001", "cvdp_copilot_b_0001"]
    reasons = {s.id: s.reason for s in data.skipped}
    assert "cid012" in reasons["cvdp_copilot_c_0001"]
    assert "__VERIF_EDA_IMAGE__" in reasons["cvdp_copilot_d_0001"]
    assert load_jsonl(path, categories=["2"]).ids == ["cvdp_copilot_b_0001"]
    assert load_jsonl(path, difficulty="easy").ids == ["cvdp_copilot_a_0001"]
    assert load_jsonl(path, ids=["cvdp_copilot_b_0001"]).ids == ["cvdp_copilot_b_0001"]
    assert len(load_jsonl(path, include_unsupported=True)) == 4
    with pytest.raises(DatasetError, match="no problem with id nope"):
        load_jsonl(path, ids=["nope"])


def test_patch_round_trip_and_tolerance():
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nd\ne\n"
    assert apply_patch(old, make_patch(old, new, "f.sv")) == new
    # Hunk stated at the wrong line still applies by content.
    assert apply_patch("x\ny\n" + old, "@@ -2,2 +2,2 @@\n a\n-b\n+B\n") == "x\ny\na\nB\nc\nd\n"
    with pytest.raises(PatchError, match="hunk 1 does not match"):
        apply_patch(old, "@@ -1,1 +1,1 @@\n-zzz\n+y\n")


def test_bundled_set_matches_the_official_shapes(tmp_path):
    records = bundled_records()
    assert len(records) >= 10
    path = tmp_path / "bundled.jsonl"
    assert export_jsonl(path) == len(records)
    exported = load_jsonl(path)
    bundled = load_dataset("bundled")
    assert exported.ids == bundled.ids
    assert sum(p.agentic for p in bundled) >= 3 and sum(not p.agentic for p in bundled) >= 7
    assert any(len(p.targets) == 2 for p in bundled)
    for problem in bundled:
        assert problem.reference and set(problem.reference) == set(problem.targets), problem.id
        assert problem.unsupported is None
    names = {(c.problem_id, c.name) for c in bundled_candidates()}
    for problem in bundled:
        for kind in ("syntax_error", "functional_bug", "wrong_port_name"):
            assert (problem.id, kind) in names, f"{problem.id} lacks a {kind} candidate"


def test_hub_offline_fails_with_a_clear_message(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    code = (
        "from cvdp_gym.data import load_dataset\n"
        "from cvdp_gym.data.hub import HubUnavailable\n"
        "try:\n    load_dataset('hf')\n"
        "except HubUnavailable as e:\n    print('CLEAR:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "CLEAR:" in out.stdout, out.stderr
    assert "nvidia/cvdp-benchmark-dataset" in out.stdout and "pass its path" in out.stdout


def test_hub_error_type_is_raised_in_process(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, at import: a test before this one may have
    # imported it already (then, without this, it tries the network until it times out).
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubUnavailable):
        load_dataset("hf:nonagentic_code_generation_no_commercial.jsonl", cache_dir=tmp_path)
