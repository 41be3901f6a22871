"""cvdp_gym's one error tree: ``except CvdpGymError`` catches every error the package raises
on bad input, each error is still the stdlib type it was before, and all of them pickle."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import gymnasium as gym
import pytest

import cvdp_gym
from cvdp_gym import errors
from cvdp_gym.errors import CvdpGymError

PACKAGE = Path(cvdp_gym.__file__).parent

#: The stdlib type each concrete error also is (what callers caught before the tree).
STDLIB_BASE = {
    "AgentInstallError": RuntimeError,
    "ArgumentTypeError": TypeError,
    "ConfigError": ValueError,
    "DatasetError": ValueError,
    "DebugError": ValueError,
    "GradingError": RuntimeError,
    "HarnessError": ValueError,
    "HubUnavailable": RuntimeError,
    "JsonlError": ValueError,
    "MissingDependencyError": ImportError,
    "MissingPathError": FileNotFoundError,
    "NodeToolchainError": RuntimeError,
    "OneLineError": ValueError,
    "PatchError": ValueError,
    "RecordError": ValueError,
    "RepoUnavailable": RuntimeError,
    "RequestFailed": Exception,
    "ResponsesFileError": ValueError,
    "RootBuildError": RuntimeError,
    "RunDirError": ValueError,
    "SandboxDied": RuntimeError,
    "SandboxUnavailable": RuntimeError,
    "UnavailableError": RuntimeError,
    "UnknownProblemError": KeyError,
    "UnsafePathError": ValueError,
    "UsageError": RuntimeError,
    "WorkerLost": RuntimeError,
    "WorkspaceError": ValueError,
}

#: ``raise`` statements in the package that are not input errors, with why.
NOT_INPUT_ERRORS = {
    ("eval/agentic.py", "RuntimeError"): "invariant: a finished episode always carries a grade",
    ("eval/refine.py", "RuntimeError"): "invariant: a finished episode always carries a grade",
    ("chat.py", "TypeError"): "caught two lines below and reported as RequestFailed",
    ("chat.py", "_Retryable"): "private: retried, then reported as RequestFailed",
    ("grading/judge.py", "ValueError"): "caught in parse_judge_reply: the official parse's way to say 'no usable score'",
    ("grading/judge.py", "TypeError"): "caught in parse_judge_reply: the official parse's way to say 'no usable score'",
    ("execution/ray_local.py", "TimeoutError"): "a local test cluster that did not start in time",
    ("execution/ray_local.py", "SystemExit"): "usage line of its command-line entry point",
    ("check/run.py", "CheckInterrupted"): "Ctrl-C is a KeyboardInterrupt, not an error",
    ("cli/options/command.py", "TypeError"): "a command declared with clashing or unknown option-group fields: a bug in cvdp-gym's own code, raised when it is imported",
    ("__init__.py", "AttributeError"): "the module __getattr__ protocol (PEP 562) for an unknown name",
    ("integrations/verl.py", "AttributeError"): "the module __getattr__ protocol (PEP 562) for an unknown name",
    ("integrations/harbor.py", "SystemExit"): "the exit status of the task's grading entry point (tests/test.sh runs it)",
    ("envs/spaces.py", "ValueError"): "invariant: the environments bound their observations to the space",
    ("eval/rescore.py", "NotRescorable"): "private: caught per row and reported as that row's reason",
    ("sandbox/podman.py", "create_api_error_from_http_exception"): "Podman's own API fails as the Docker SDK's calls do (APIError), which the Docker backend handles",
    ("sandbox/scratch.py", "ValueError"): "invariant: callers name one of SCRATCH_KINDS (a programming error)",
    ("sandbox/tree_copy.py", "OSError"): "a mount(2) that failed: caught by copy_tree, which copies instead",
    ("sandbox/tree_texts.py", "KeyError"): "the Mapping protocol for a path that is not a text file",
    ("service/app.py", "_Refused"): "private: caught two lines below and answered 400",
    ("envs/base.py", "TypeError"): "an unknown keyword, said as Python says it of any constructor (gymnasium.make passes every keyword on)",
    ("integrations/verifiers.py", "SandboxError"): "verifiers' own error for a rollout whose sandbox failed: the framework fails the rollout instead of scoring it",
    ("harness/isolation.py", "_Unrenamable"): "private: caught in _plans, which then renames nothing (the static check still holds)",
}


def error_classes() -> list[type[BaseException]]:
    return [getattr(errors, name) for name in errors.__all__ if isinstance(getattr(errors, name), type)]


def test_every_error_is_in_the_tree_keeps_its_stdlib_type_and_pickles():
    classes = [cls for cls in error_classes() if cls is not CvdpGymError]
    assert {c.__name__ for c in classes} == set(STDLIB_BASE)
    for cls in classes:
        assert issubclass(cls, CvdpGymError), cls
        assert issubclass(cls, STDLIB_BASE[cls.__name__]), cls
        error = cls("bad\ninput")
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is cls and str(copy) == str(error) and copy.args == error.args
    assert pickle.loads(pickle.dumps(errors.RequestFailed("HTTP 500"))).reason == "HTTP 500"


def test_one_line_errors_stay_one_line_after_pickling():
    error = errors.DatasetError("x.jsonl:3: id 'a\nb' \x1b[31m" + "y" * 5000)
    assert "\n" not in str(error) and "\x1b" not in str(error) and len(str(error)) == errors.MESSAGE_CHARS
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_old_homes_still_export_the_classes():
    from cvdp_gym.data import DatasetError
    from cvdp_gym.data.patch import PatchError
    from cvdp_gym.eval.sources import RequestFailed, ResponsesFileError
    from cvdp_gym.execution.executors import WorkerLost
    from cvdp_gym.execution.jobs import NodeToolchainError
    from cvdp_gym.harness.compose import HarnessError
    from cvdp_gym.harness.runner import CandidateError
    from cvdp_gym.jsonl import JsonlError, OneLineError
    from cvdp_gym.sandbox import SandboxUnavailable
    from cvdp_gym.sandbox.workspace import WorkspaceError
    from cvdp_gym.toolchain.root import RootBuildError

    assert CandidateError is errors.UnsafePathError
    for cls in (DatasetError, PatchError, RequestFailed, ResponsesFileError, WorkerLost, NodeToolchainError,
                HarnessError, JsonlError, OneLineError, SandboxUnavailable, WorkspaceError, RootBuildError):
        assert cls is getattr(errors, cls.__name__)


def _bad_inputs(tmp_path: Path):
    """(what, a call that must raise a CvdpGymError, the stdlib type it also is)."""
    from cvdp_gym.data import load_dataset
    from cvdp_gym.data.patch import apply_patch
    from cvdp_gym.data.problems import problem_from_record
    from cvdp_gym.eval.passk import pass_at_k
    from cvdp_gym.eval.sources import read_responses
    from cvdp_gym.execution.executor_factory import make_executor
    from cvdp_gym.grading.rewards import make_reward
    from cvdp_gym.harness.compose import parse_services
    from cvdp_gym.parsers import parse_tool_calls
    from cvdp_gym.sandbox import make_sandbox
    from cvdp_gym.sandbox.paths import check_relative_path
    from cvdp_gym.toolchain import detect

    not_json = tmp_path / "broken.jsonl"
    not_json.write_text('{"id": "a"\n')
    binary = tmp_path / "answers.jsonl"
    binary.write_bytes(b"\x00\x01\x02")
    return [
        ("a dataset that is not JSON", lambda: load_dataset(not_json), ValueError),
        ("an unknown problem id", lambda: load_dataset("bundled")["no_such_problem"], KeyError),
        ("a record of neither shape", lambda: problem_from_record({"id": "x", "categories": []}), ValueError),
        ("a responses file of binary data", lambda: read_responses(binary), ValueError),
        ("an unknown sandbox", lambda: make_sandbox("vm"), ValueError),
        ("an unknown executor", lambda: make_executor("gpu"), ValueError),
        ("an unknown reward", lambda: make_reward("nope"), ValueError),
        ("an unknown toolchain", lambda: detect("bogus"), ValueError),
        ("an unknown tool-call format", lambda: parse_tool_calls("x", "nope"), ValueError),
        ("a path out of the workspace", lambda: check_relative_path("../etc/passwd"), ValueError),
        ("a harness without compose file", lambda: parse_services({"src/.env": ""}), ValueError),
        ("a compose file that is not YAML", lambda: parse_services({"docker-compose.yml": "a: [b"}), ValueError),
        ("a patch that does not apply", lambda: apply_patch("a\n", "@@ -1 +1 @@\n-zzz\n+b\n"), ValueError),
        ("pass@k with more passes than samples", lambda: pass_at_k(1, 2, 1), ValueError),
        ("an unknown refine feedback mode", lambda: gym.make("CVDP-Refine-v0", feedback="psychic"), ValueError),
        ("an unknown agentic tool format", lambda: gym.make("CVDP-Agentic-v0", tool_format="morse"), ValueError),
    ]


def test_except_cvdp_gym_error_catches_every_bad_input(tmp_path):
    for what, call, stdlib in _bad_inputs(tmp_path):
        with pytest.raises(CvdpGymError) as caught:
            call()
        assert isinstance(caught.value, stdlib), what
        assert str(caught.value), what


@pytest.mark.sandbox
def test_environment_misuse_is_a_cvdp_gym_error(toolchain):
    env = gym.make("CVDP-SingleShot-v0", cache=False)
    try:
        with pytest.raises(errors.UsageError):  # gym.make's order check comes first; the env's own is ours
            env.unwrapped.step("module m; endmodule")
        with pytest.raises(errors.UnknownProblemError):
            env.reset(options={"problem_id": "no_such_problem"})
        env.reset(seed=0)
        with pytest.raises(errors.ArgumentTypeError):
            env.step(42)
        with pytest.raises(errors.ArgumentTypeError):
            env.reset(options={"grading_deadline": "soon"})
    finally:
        env.close()


@pytest.mark.sandbox
def test_workspace_misuse_is_a_cvdp_gym_error(sandbox, tmp_path):
    from cvdp_gym.sandbox.workspace import Workspace

    workspace = Workspace({"rtl/a.sv": "module a; endmodule\n"}, sandbox=sandbox)
    try:
        with pytest.raises(errors.ArgumentTypeError):
            workspace.run(["ls"])
        with pytest.raises(errors.UnsafePathError):
            workspace.write_text("../outside.txt", "x")
    finally:
        workspace.close()
    with pytest.raises(errors.UsageError):
        workspace.run("ls")


def _raised_names(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name is not None:
                names.append(name)
    return names


#: What a command-line module raises to end the command (an exit code, not an error).
CLI_EXITS = {"fail", "Exit"}


def test_every_raise_in_the_package_uses_the_tree():
    tree_names = {cls.__name__ for cls in error_classes()}
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("data/bundled/"):
            continue
        for name in _raised_names(path):
            if relative.startswith("cli/") and name in CLI_EXITS:
                continue
            if name not in tree_names and (relative, name) not in NOT_INPUT_ERRORS:
                strays.append(f"{relative}: raise {name}(...)")
    assert not strays, "raise an error from cvdp_gym.errors (or list why not):\n" + "\n".join(strays)
