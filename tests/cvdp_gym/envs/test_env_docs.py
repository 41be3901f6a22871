"""The environments' docstrings are their documentation pages: Gymnasium's fixed headings,
argument tables that name exactly the real ``__init__`` parameters (with their defaults),
``info`` tables that name exactly the keys ``reset`` and ``step`` return, and examples
that run."""

from __future__ import annotations

import doctest
import inspect
import re

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.envs.assertion import AssertionEnv
from cvdp_gym.envs.base import GRADER_OPTIONS, CVDPEnvBase
from cvdp_gym.envs.refine import RefineEnv
from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.envs.testbench import TestbenchEnv
from cvdp_gym.grading.settings import GraderSettings

ENVS = {
    "CVDP-SingleShot-v0": SingleShotEnv, "CVDP-Refine-v0": RefineEnv, "CVDP-Agentic-v0": AgenticEnv,
    "RTL-Testbench-v0": TestbenchEnv, "RTL-Assertion-v0": AssertionEnv,
}
#: Gymnasium's env-page headings (cartpole.py), with the ``info`` contract under its own.
ENV_HEADINGS = [
    "Description",
    "Action Space",
    "Observation Space",
    "Rewards",
    "Starting State",
    "Episode End",
    "Info",
    "Arguments",
    "Vectorized environment",
    "Version History",
]
BASE_HEADINGS = ["Description", "Action Space", "Observation Space", "Starting State", "Arguments", "Info", "Version History"]
_ROW = re.compile(r"^\| `([^`]+)` \| (.+) \|$")


def sections(cls: type) -> dict[str, str]:
    """The docstring's ``## Heading`` sections, in order."""
    doc = inspect.getdoc(cls) or ""
    parts = re.split(r"^## (.+)$", doc, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def table_rows(section: str) -> dict[str, list[str]]:
    """First-column name -> the other cells, for each table row naming a parameter or key."""
    rows = {}
    for line in section.splitlines():
        m = _ROW.match(line.strip())
        if m:
            rows[m.group(1)] = [cell.strip() for cell in m.group(2).split(" | ")]
    return rows


def own_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The ``__init__`` parameters a class documents: all of the base's; a subclass's own,
    less ``**kwargs`` and what it passes through to the base (``dataset``)."""
    if "__init__" not in cls.__dict__:
        return {}
    params = dict(inspect.signature(cls.__init__).parameters)
    params.pop("self")
    params = {n: p for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
    if cls is CVDPEnvBase:  # the grader's keywords, taken by ``**grading`` with ``GraderSettings``'s defaults
        defaults = GraderSettings()
        params.update(
            (name, inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=getattr(defaults, field)))
            for name, field in GRADER_OPTIONS.items()
        )
    if cls is not CVDPEnvBase:
        base = inspect.signature(CVDPEnvBase.__init__).parameters
        params = {n: p for n, p in params.items() if n not in base}
    return params


@pytest.mark.parametrize("cls", [*ENVS.values(), CVDPEnvBase], ids=lambda c: c.__name__)
def test_headings_in_order(cls):
    assert list(sections(cls)) == (BASE_HEADINGS if cls is CVDPEnvBase else ENV_HEADINGS)
    assert "* v0:" in sections(cls)["Version History"]


@pytest.mark.parametrize("cls", ENVS.values(), ids=lambda c: c.__name__)
def test_episode_end_is_numbered_termination_or_truncation(cls):
    items = re.findall(r"^(\d+)\. (\w+):", sections(cls)["Episode End"], flags=re.M)
    assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)) and items
    assert {kind for _, kind in items} <= {"Termination", "Truncation"}


@pytest.mark.parametrize("cls", [*ENVS.values(), CVDPEnvBase], ids=lambda c: c.__name__)
def test_argument_table_is_the_real_signature(cls):
    rows = table_rows(sections(cls)["Arguments"])
    params = own_parameters(cls)
    assert set(rows) == set(params)
    for name, (_, default, _) in rows.items():
        assert default == f"`{params[name].default!r}`", name
    if cls is not CVDPEnvBase:
        assert "CVDPEnvBase" in sections(cls)["Arguments"]  # points to the base's table


def info_keys(cls: type, when: str) -> set[str]:
    """Keys the ``Info`` table says are present at ``when`` (reset, step, last step)."""
    rows = table_rows(sections(cls)["Info"])
    return {key for key, (_, moments, _) in rows.items() if when in [m.strip() for m in moments.split(",")]}


@pytest.mark.sandbox
def test_info_tables_are_the_real_keys(toolchain):
    no_code = "I would use a state machine."
    env = gym.make("CVDP-SingleShot-v0", cache=False)
    _, info = env.reset(seed=0)
    assert set(info) == info_keys(SingleShotEnv, "reset")
    *_, info = env.step(no_code)
    assert set(info) == info_keys(SingleShotEnv, "step")
    env.close()

    env = gym.make("CVDP-Refine-v0", max_attempts=2, cache=False)
    _, info = env.reset(seed=0)
    assert set(info) == info_keys(RefineEnv, "reset")
    *_, info = env.step(no_code)
    assert set(info) == info_keys(RefineEnv, "step")
    *_, info = env.step(no_code)
    assert set(info) == info_keys(RefineEnv, "step") | info_keys(RefineEnv, "last step")
    env.close()

    env = gym.make("CVDP-Agentic-v0", tool_format="qwen", cache=False)
    _, info = env.reset(seed=0)
    assert set(info) == info_keys(AgenticEnv, "reset")
    *_, info = env.step('<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"}}</tool_call>')
    assert set(info) == info_keys(AgenticEnv, "step")
    *_, info = env.step('<tool_call>{"name": "finish", "arguments": {}}</tool_call>')
    assert set(info) == info_keys(AgenticEnv, "step") | info_keys(AgenticEnv, "last step")
    env.close()


@pytest.mark.sandbox
@pytest.mark.parametrize("cls", ENVS.values(), ids=lambda c: c.__name__)
def test_examples_run(toolchain, cls):
    (test,) = [t for t in doctest.DocTestFinder(recurse=False).find(cls) if t.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
