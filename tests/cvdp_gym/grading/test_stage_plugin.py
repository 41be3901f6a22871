"""A grading stage added by a plug-in (:mod:`cvdp_gym.grading.stages`): a separate installed
package's ``stages`` module, found through its entry point, runs in ``cvdp-gym eval``, in the
environment and in the grading service, with no change to cvdp-gym.

The package is written here into a temporary folder with its own ``.dist-info`` (what ``pip
install`` leaves) and reached only through the entry point, never imported by the test.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.errors import ConfigError
from cvdp_gym.grading import Grader, stages
from cvdp_gym.grading.result import STAGES
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.plugins import ENTRY_POINT_GROUP, PluginTable, packages

pytestmark = pytest.mark.sandbox

PROBLEM_ID = "cvdp_gym_edge_detector_0001"
#: The made-up stage: it counts the modules the answer declares, on answers whose tests passed.
MODULE_COUNT_STAGE = '''
"""A made-up grading stage: how many modules a passing answer declares."""
import re

from cvdp_gym.grading.result import Stage


class ModuleCount:
    name = "module_count"

    def run(self, context):
        result = context.result
        if result is None or not result.passed:
            return
        count = sum(len(re.findall(r"\\bmodule\\s+\\w+", text)) for text in context.files.values())
        result.stages.append(Stage(self.name, count == 1, f"{count} module(s)"))


STAGES = (ModuleCount(),)
'''


@pytest.fixture
def stage_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The made-up package installed on ``sys.path``, and the plug-in tables read afresh."""
    site = tmp_path / "site"
    package = site / "module_count_stage"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A grading-stage plug-in made up for this test."""\n')
    (package / "stages.py").write_text(textwrap.dedent(MODULE_COUNT_STAGE).lstrip())
    info = site / "module_count_stage-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: module_count_stage\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nmodule-count = module_count_stage\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(stages, "PLUGIN_STAGES", PluginTable("stages", "STAGES"))
    packages.cache_clear()
    yield
    packages.cache_clear()
    for name in [m for m in sys.modules if m.split(".")[0] == "module_count_stage"]:
        del sys.modules[name]


def stage_names(stages_list: list) -> list[str]:
    return [s["name"] if isinstance(s, dict) else s.name for s in stages_list]


def test_the_stages_without_plugins_are_the_built_in_sequence() -> None:
    assert [s.name for s in stages.BUILT_IN_STAGES] == [*STAGES, "reference"]


def test_a_plugin_stage_cannot_take_a_built_in_name(stage_plugin, tmp_path: Path) -> None:
    stages_file = tmp_path / "site" / "module_count_stage" / "stages.py"
    stages_file.write_text(stages_file.read_text().replace('name = "module_count"', 'name = "tests"'))
    with pytest.raises(ConfigError, match="built-in stage's name: tests"):
        stages.job_stages()


def test_a_plugin_stage_runs_in_eval(stage_plugin, toolchain, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = CliRunner().invoke(
        app, ["eval", "bundled", "--id", PROBLEM_ID, "--references", "--out", str(out)], env={"COLUMNS": "250"},
    )
    assert done.exit_code == 0, done.output
    (row,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert row["passed"]
    assert stage_names(row["grade"]["stages"]) == [*STAGES, "module_count"]
    assert row["grade"]["stages"][-1] == {"name": "module_count", "passed": True, "detail": "1 module(s)", "seconds": 0.0}


def test_a_plugin_stage_runs_in_the_environment(stage_plugin, toolchain) -> None:
    reference = load_dataset("bundled", ids=[PROBLEM_ID]).problems[0].reference
    env = gym.make("CVDP-SingleShot-v0", ids=[PROBLEM_ID], cache=False)
    try:
        env.reset(options={"problem_id": PROBLEM_ID})
        text = "\n".join(f"```systemverilog\n{code}\n```" for code in reference.values())
        _, reward, _, _, info = env.step(text)
    finally:
        env.close()
    assert info["passed"] and reward > 0
    assert list(info["stages"]) == [*STAGES, "module_count"]
    assert info["stages"]["module_count"] == {"passed": True, "detail": "1 module(s)"}


def test_a_plugin_stage_runs_in_the_service(stage_plugin, toolchain, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    import httpx

    from cvdp_gym.service.app import ServiceConfig, create_app
    from tests.support import ServedApp

    data = load_dataset("bundled", ids=[PROBLEM_ID])
    grader = Grader.from_settings(GraderSettings(cache=tmp_path / "grades.sqlite"))
    served = ServedApp(create_app(ServiceConfig(grader, data, workers=1)))
    try:
        request = {"problem_id": PROBLEM_ID, "files": dict(data[PROBLEM_ID].reference)}
        first = httpx.post(f"{served.url}/v1/grade", json=request, timeout=120).json()
        again = httpx.post(f"{served.url}/v1/grade", json=request, timeout=120).json()
    finally:
        served.stop()
    assert first["passed"] and not first["cached"]
    assert stage_names(first["stages"]) == [*STAGES, "module_count"]
    assert first["stages"][-1]["detail"] == "1 module(s)"
    assert again["cached"] and again["stages"] == first["stages"]  # kept with the verdict it is part of
