"""CVDP-Agentic-v0 end to end: scripted agents (kept as data) in real sandboxes, real grading."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import gymnasium as gym
import pytest
import yaml
from gymnasium.utils.env_checker import check_env

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.data import load_dataset
from cvdp_gym.data.bundle import BUNDLED_DIR
from cvdp_gym.data.patch import make_patch
from cvdp_gym.envs.agentic import COMPILE_BONUS, AgenticEnv
from cvdp_gym.envs.base import make_grader
from cvdp_gym.envs.tools import EXECUTE_BASH_TOOL, FINISH_TOOL
from cvdp_gym.parsers import ToolCall, format_tool_call
from tests.support import AGENTS

pytestmark = pytest.mark.sandbox

PROBLEMS = {p.id: p for p in load_dataset("bundled") if p.agentic}
FORMATS = ("qwen", "qwen3_coder", "harmony")
CRC8, PWM, RR = sorted(PROBLEMS)
HOSTILE = yaml.safe_load((AGENTS / "hostile.yaml").read_text())


@pytest.fixture(scope="module")
def grader(sandbox):
    return make_grader(sandbox, cache=False)


def make_env(grader, **kwargs) -> AgenticEnv:
    return AgenticEnv(grader=grader, **kwargs)


def solution(problem_id: str, path: str) -> str:
    text = (BUNDLED_DIR / problem_id / "solution" / path).read_text()
    return text if text.endswith("\n") else text + "\n"


def scripted_actions(problem_id: str) -> list[dict]:
    """The fixture's actions with ``{{solution:PATH}}`` filled in."""
    script = yaml.safe_load((AGENTS / f"{problem_id}.yaml").read_text())
    assert script["problem_id"] == problem_id
    actions = []
    for action in script["actions"]:
        command = action.get("command")
        if command is not None:
            while "{{solution:" in command:
                start = command.index("{{solution:")
                end = command.index("}}", start)
                command = command[:start] + solution(problem_id, command[start + 11 : end]) + command[end + 2 :]
        actions.append({**action, "command": command})
    return actions


def render(action: dict, fmt: str) -> str:
    """One assistant turn: a line of prose, then the call as a model in ``fmt`` writes it."""
    arguments = {"command": action["command"]} if action["command"] is not None else action.get("arguments", {})
    call = format_tool_call(ToolCall(action["tool"], arguments), fmt)
    if fmt == "harmony":
        return "<|channel|>analysis<|message|>Next step.<|end|><|start|>assistant" + call
    return "Next step.\n" + call


def bash(command: str, fmt: str = "qwen") -> str:
    return render({"tool": "execute_bash", "command": command}, fmt)


FINISH = render({"tool": "finish", "command": None, "arguments": {"message": "done"}}, "qwen")


# -- scripted agents that solve every bundled agentic problem -------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("problem_id", sorted(PROBLEMS))
def test_scripted_agent_solves_the_problem(grader, problem_id, fmt):
    env = make_env(grader, tool_format=fmt)
    try:
        obs, info = env.reset(options={"problem_id": problem_id})
        assert info["tools"] == [EXECUTE_BASH_TOOL, FINISH_TOOL] and info["problem"]["id"] == problem_id
        assert obs.startswith(info["messages"][0]["content"]) and obs.endswith(info["messages"][1]["content"])
        actions = scripted_actions(problem_id)
        for number, action in enumerate(actions, start=1):
            obs, reward, terminated, truncated, info = env.step(render(action, fmt))
            assert info["turn"] == number and info["format"] == fmt and not truncated
            if action["tool"] == "finish":
                break
            assert not terminated and reward == 0.0
            (message,) = info["tool_messages"]
            assert message["role"] == "tool" and message["name"] == "execute_bash"
            for expected in action.get("expect", []):
                assert expected in message["content"], (action["command"][:80], message["content"][-2000:])
            marker = {"qwen": "<tool_response>", "qwen3_coder": "<tool_response>", "harmony": "<|start|>functions.execute_bash"}[fmt]
            assert obs.startswith(marker) and message["content"] in obs
        assert terminated and reward == pytest.approx(1.4), info["reason"]
        assert info["end_reason"] == "finish" and info["passed"] and info["failure_class"] is None
        assert info["commands_run"] == len(actions) - 1 and info["malformed_calls"] == 0
        assert info["graded_files"] == list(PROBLEMS[problem_id].targets) and info["tests"]["failed"] == 0
        with pytest.raises(RuntimeError, match="reset"):
            env.step(FINISH)
    finally:
        env.close()


@pytest.mark.parametrize(
    "problem_id, fmt, style",
    [(CRC8, "qwen", "hunks"), (PWM, "qwen3_coder", "fenced"), (RR, "harmony", "final")],
)
def test_diff_only_agent(grader, problem_id, fmt, style):
    """An agent that answers with nothing but a diff (CVDP's golden patch shape or a fenced one)."""
    problem = PROBLEMS[problem_id]
    target = problem.targets[0]
    diff = make_patch(problem.context.get(target, ""), solution(problem_id, target), target)
    if style == "hunks":  # hunks only, no ---/+++ header, no fence, prose around it
        answer = "The loop bound was off by one.\n\n" + diff.split("\n", 2)[2] + "\nThat fixes it.\n"
    elif style == "fenced":
        answer = f"Here is the patch:\n```diff\n{diff}```\n"
    else:
        answer = f"<|channel|>analysis<|message|>Write it.<|end|><|start|>assistant<|channel|>final<|message|>```diff\n{diff}```<|return|>"
    env = make_env(grader, tool_format=fmt)
    try:
        env.reset(options={"problem_id": problem_id})
        _, reward, terminated, truncated, info = env.step(answer)
        assert (terminated, truncated, info["end_reason"]) == (True, False, "no_tool_call")
        assert info["patch"] == {"files": [target], "applied": True, "already_applied": False, "detail": ""}
        assert reward == pytest.approx(1.4), info["reason"]
    finally:
        env.close()


def test_final_diff_already_applied_or_not_applying(grader):
    """A diff of work already done in bash is not applied twice; a bad one is reported."""
    problem = PROBLEMS[RR]
    target = problem.targets[0]
    diff = make_patch("", solution(RR, target), target)
    env = make_env(grader)
    try:
        env.reset(options={"problem_id": RR})
        env.step(bash(f"cat > {target} <<'EOF'\n{solution(RR, target)}EOF"))
        _, reward, terminated, _, info = env.step(f"Done. The patch:\n```diff\n{diff}```")
        assert info["patch"]["already_applied"] and reward == pytest.approx(1.4), info["reason"]
        env.reset(options={"problem_id": RR})
        _, reward, terminated, _, info = env.step("```diff\n--- a/rtl/nope.sv\n+++ b/rtl/nope.sv\n@@ -1,1 +1,1 @@\n-x\n+y\n```")
        assert terminated and not info["patch"]["applied"] and "no such file" in info["patch"]["detail"]
        assert info["failure_class"] == "format_error" and reward == 0.0  # graded as it was
    finally:
        env.close()


# -- hostile agents ------------------------------------------------------------------------


def run_hostile(grader, name: str, marker: str, problem_id: str = RR, **kwargs):
    """Run one hostile agent; returns the env (still open) and the tool outputs."""
    env = make_env(grader, command_timeout_s=3, max_workspace_mb=20, max_output_chars=4000, **kwargs)
    env.reset(options={"problem_id": problem_id})
    outputs = []
    for step in HOSTILE[name]:
        fill = {"{{marker}}": marker, "{{home}}": str(Path.home())}
        command = step["command"]
        for key, value in fill.items():
            command = command.replace(key, value)
        _, reward, terminated, truncated, info = env.step(bash(command))
        (message,) = info["tool_messages"]
        out = message["content"]
        assert not terminated and not truncated and reward == 0.0
        if "expect_any" in step:
            wanted = [s.replace("{{marker}}", marker) for s in step["expect_any"]]
            assert any(w in out for w in wanted), out[-1500:]
        for unwanted in step.get("expect_none", []):
            assert unwanted.replace("{{marker}}", marker) not in out, out[-1500:]
        outputs.append(out)
    return env, outputs


def end_cleanly(env: AgenticEnv) -> None:
    root = env.workspace.root
    _, _, terminated, _, info = env.step(FINISH)
    assert terminated and info["failure_class"] == "format_error"  # no target written: no harness run
    env.close()
    assert not root.exists()


def test_hostile_network(grader):
    env, _ = run_hostile(grader, "network", uuid.uuid4().hex)
    end_cleanly(env)


def test_hostile_reads_host_secrets(grader):
    marker = f"cvdp-secret-{uuid.uuid4().hex}"
    secret = Path.home() / marker
    secret.write_text(f"{marker}-secret")
    try:
        env, _ = run_hostile(grader, "host_secrets", marker)
    finally:
        secret.unlink()
    end_cleanly(env)


def test_hostile_writes_outside_the_workspace(grader):
    marker = f"cvdp-victim-{uuid.uuid4().hex}"
    env, _ = run_hostile(grader, "write_outside", marker)
    for path in (Path("/usr") / marker, Path("/tmp") / marker, Path.home() / f"{marker}.txt", Path("/etc") / marker):
        assert not path.exists(), path
    end_cleanly(env)


def test_hostile_edits_the_tests_but_grading_uses_the_real_harness(grader):
    harness_before = dict(PROBLEMS[CRC8].harness)
    env, _ = run_hostile(grader, "edit_tests", uuid.uuid4().hex, problem_id=CRC8)
    try:
        env.step(bash(f"cat > rtl/crc8.sv <<'EOF'\n{solution(CRC8, 'rtl/crc8.sv')}EOF"))
        _, reward, terminated, _, info = env.step(FINISH)
        assert terminated and reward == pytest.approx(1.4) and info["tests"]["total"] == 16, info["reason"]
        assert env.problem.harness == harness_before
    finally:
        env.close()


def test_hostile_fork_bomb(grader):
    start = time.monotonic()
    env, _ = run_hostile(grader, "fork_bomb", uuid.uuid4().hex)
    assert time.monotonic() - start < 250  # ended by the limits, not left to run
    end_cleanly(env)


def test_hostile_yes_forever(grader):
    start = time.monotonic()
    env, outputs = run_hostile(grader, "yes_forever", uuid.uuid4().hex)
    assert "time limit" in outputs[0] and len(outputs[0]) < 4000 + 200
    assert time.monotonic() - start < 250  # ended by the limits, not left to run
    end_cleanly(env)


def test_hostile_one_gigabyte_file(grader):
    env, _ = run_hostile(grader, "big_file", uuid.uuid4().hex)
    size, _ = env.workspace.usage()
    assert size <= 20 * 2**20 and not (env.workspace.path / "big").exists()
    end_cleanly(env)


def test_hostile_background_process_dies_with_its_command(grader, processes_with):
    marker = f"cvdp-bg-{uuid.uuid4().hex}"
    env, _ = run_hostile(grader, "background_process", marker)
    time.sleep(0.2)
    assert processes_with(marker) == []
    end_cleanly(env)


# -- protocol --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, turn, expected",
    [
        ("qwen", '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "ls"\n</tool_call>', "invalid JSON"),
        ("qwen", '<tool_call>\n{"name": "rm_everything", "arguments": {}}\n</tool_call>', "unknown tool 'rm_everything'"),
        ("qwen", '<tool_call>\n{"name": "execute_bash", "arguments": {"cmd": "ls"}}\n</tool_call>', "needs a string argument 'command'"),
        ("qwen3_coder", "<tool_call>\n<function=execute_bash>\n<parameter=cmd>\nls\n</parameter>\n</function>\n</tool_call>", "'command'"),
        ("harmony", "<|channel|>commentary to=functions.execute_bash <|constrain|>json<|message|>{command: ls<|call|>", "invalid JSON"),
    ],
)
def test_malformed_calls_are_explained_and_counted(grader, fmt, turn, expected):
    env = make_env(grader, tool_format=fmt)
    try:
        env.reset(options={"problem_id": RR})
        obs, reward, terminated, truncated, info = env.step(turn)
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert expected in obs and info["malformed_calls"] == 1 and info["commands_run"] == 0
        obs, _, _, _, info = env.step(turn + "\n" + bash("echo ok", fmt))
        assert info["malformed_calls"] == 2 and info["commands_run"] == 1 and "ok" in obs
    finally:
        env.close()


def test_max_turns_truncates_and_grades(grader):
    env = make_env(grader, max_turns=2)
    try:
        env.reset(options={"problem_id": RR})
        _, _, terminated, truncated, info = env.step(bash("cd rtl"))
        assert (terminated, truncated, info["cwd"]) == (False, False, "/code/rtl")
        obs, reward, terminated, truncated, info = env.step(bash("pwd"))
        assert "/code/rtl" in obs and (terminated, truncated) == (False, True)
        assert info["end_reason"] == "max_turns" and info["failure_class"] == "format_error" and reward == 0.0
        with pytest.raises(RuntimeError):
            env.step(bash("ls"))
    finally:
        env.close()


def test_step_reward_shaping_gives_a_bonus_for_the_first_clean_compile(grader):
    env = make_env(grader, step_reward_shaping=True)
    try:
        env.reset(options={"problem_id": RR})
        rewards = [env.step(bash(cmd))[1] for cmd in (
            "iverilog -g2012 -o /tmp/a.out verif/tb_rr_arbiter.sv",  # fails: no design yet
            f"cat > rtl/rr_arbiter.sv <<'EOF'\n{solution(RR, 'rtl/rr_arbiter.sv')}EOF",
            "iverilog -g2012 -o /tmp/a.out rtl/rr_arbiter.sv verif/tb_rr_arbiter.sv",
            "iverilog -g2012 -o /tmp/a.out rtl/rr_arbiter.sv verif/tb_rr_arbiter.sv",
            "rm rtl/rr_arbiter.sv",
        )]
        assert rewards == [0.0, 0.0, COMPILE_BONUS, 0.0, 0.0]
    finally:
        env.close()


def test_close_removes_the_workspace(grader):
    env = make_env(grader)
    env.reset(seed=0)
    first = env.workspace.root
    env.reset(seed=1)
    assert not first.exists()
    second = env.workspace.root
    env.close()
    env.close()
    assert not second.exists()


def test_gymnasium_make_and_check_env(toolchain):
    env = gym.make("cvdp_gym:CVDP-Agentic-v0", cache=False)
    try:
        assert {p.id for p in env.unwrapped.problems} == set(PROBLEMS)
        with pytest.raises(ValueError, match="tool_format"):
            AgenticEnv(tool_format="xml")
        check_env(env.unwrapped)
    finally:
        env.close()


def test_auto_format_answers_in_the_format_each_turn_used(grader):
    env = make_env(grader, tool_format="auto")
    try:
        env.reset(options={"problem_id": RR})
        for fmt, marker in (("qwen3_coder", "<tool_response>"), ("harmony", "<|start|>functions.execute_bash"), ("qwen", "<tool_response>")):
            obs, _, terminated, _, info = env.step(bash("echo hi", fmt))
            assert info["format"] == fmt and obs.startswith(marker) and "hi" in obs and not terminated
        obs, _, _, _, info = env.step("Let me look.\n```bash\nls verif\n```")
        assert info["format"] == "bash" and "tb_rr_arbiter.sv" in obs
    finally:
        env.close()
