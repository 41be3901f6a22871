"""CVDP-Agentic-v0's compile bonus is paid only for a compile that really ran.

Real episodes in the real sandbox on the bundled ``rr_arbiter`` problem (its target:
``rtl/rr_arbiter.sv``), ``step_reward_shaping=True``. A command's text and output are the
model's to write, so the environment compiles the command's ``iverilog`` run again itself,
read-only, and pays ``COMPILE_BONUS`` only when that compile of a target file succeeds.
"""

from __future__ import annotations

import pytest

from cvdp_gym.data.bundle import BUNDLED_DIR
from cvdp_gym.envs.agentic import COMPILE_BONUS, AgenticEnv
from cvdp_gym.envs.base import make_grader
from cvdp_gym.envs.compile_bonus import iverilog_commands
from cvdp_gym.parsers import ToolCall, format_tool_call

pytestmark = pytest.mark.sandbox

RR = "cvdp_gym_agentic_rr_arbiter_0001"
DESIGN = (BUNDLED_DIR / RR / "solution" / "rtl" / "rr_arbiter.sv").read_text()
WRITE_DESIGN = f"cat > rtl/rr_arbiter.sv <<'EOF'\n{DESIGN.rstrip()}\nEOF"
#: A design that does not compile (a statement outside any module).
BROKEN = "cat > rtl/rr_arbiter.sv <<'EOF'\nmodule rr_arbiter(input clk);\n  assign = ;\nendmodule\nEOF"
COMPILE = "iverilog -g2012 -o /tmp/a.out rtl/rr_arbiter.sv verif/tb_rr_arbiter.sv"


@pytest.fixture(scope="module")
def grader(sandbox):
    return make_grader(sandbox, cache=False)


def bash(command: str) -> str:
    return "Next step.\n" + format_tool_call(ToolCall("execute_bash", {"command": command}), "qwen")


def rewards(grader, commands: list[str]) -> list[tuple[float, str]]:
    """Each command's step reward and what it printed, in one shaped episode."""
    env = AgenticEnv(grader=grader, step_reward_shaping=True)
    try:
        env.reset(options={"problem_id": RR})
        out = []
        for command in commands:
            observation, reward, _, _, info = env.step(bash(command))
            assert info["shaping"] == reward
            out.append((reward, observation))
        return out
    finally:
        env.close()


def test_a_command_that_only_names_iverilog_earns_nothing(grader):
    steps = rewards(grader, [
        WRITE_DESIGN,
        "echo iverilog is great",
        "echo iverilog -g2012 -o /tmp/a.out rtl/rr_arbiter.sv",
        "printf 'iverilog rtl/rr_arbiter.sv\\n'; : iverilog rtl/rr_arbiter.sv",
    ])
    assert [reward for reward, _ in steps] == [0.0, 0.0, 0.0, 0.0]
    assert all("[exit code: 0]" in observation for _, observation in steps)  # each command succeeded


def test_a_failing_compile_earns_nothing(grader):
    steps = rewards(grader, [BROKEN, COMPILE, f"{COMPILE} || true", f"{COMPILE} > /tmp/log 2>&1; true"])
    assert [reward for reward, _ in steps] == [0.0, 0.0, 0.0, 0.0]
    assert "[exit code: 0]" in steps[2][1] and "[exit code: 0]" in steps[3][1]  # exit 0, output hidden


def test_a_fake_iverilog_earns_nothing(grader):
    """A program of the model's own named ``iverilog`` exits 0 and prints nothing: the
    environment's own compile of the same command (the real compiler) fails."""
    fake = "printf '#!/bin/sh\\nexit 0\\n' > /tmp/iverilog && chmod +x /tmp/iverilog"
    steps = rewards(grader, [BROKEN, fake, "/tmp/iverilog -g2012 -o /tmp/a.out rtl/rr_arbiter.sv", "PATH=/tmp:$PATH; iverilog rtl/rr_arbiter.sv"])
    assert [reward for reward, _ in steps] == [0.0, 0.0, 0.0, 0.0]
    assert "[exit code: 0]" in steps[2][1] and "[exit code: 0]" in steps[3][1]


def test_a_compiler_with_parts_of_the_model_s_own_earns_nothing(grader):
    """``-B`` names the folder of the compiler's own parts (its preprocessor and ``ivl``): with
    the model's there, the real driver exits 0 on a design that does not compile; such a run is
    never compiled again, so it never pays."""
    parts = "mkdir -p /tmp/parts && for p in ivlpp ivl; do printf '#!/bin/sh\\nexit 0\\n' > /tmp/parts/$p; chmod +x /tmp/parts/$p; done"
    steps = rewards(grader, [BROKEN, parts, "iverilog -B/tmp/parts -o /tmp/a.out rtl/rr_arbiter.sv"])
    assert [reward for reward, _ in steps] == [0.0, 0.0, 0.0]
    assert "[exit code: 0]" in steps[2][1], steps[2][1]  # the driver itself was fooled


def test_a_compile_of_something_else_earns_nothing(grader):
    other = "printf 'module other; endmodule\\n' > /tmp/other.v && iverilog -o /tmp/o.out /tmp/other.v"
    steps = rewards(grader, [other])
    assert steps[0][0] == 0.0 and "[exit code: 0]" in steps[0][1]  # it compiled: no target among its sources


def test_a_real_compile_of_the_design_earns_the_bonus_once(grader):
    steps = rewards(grader, [
        COMPILE,  # no design yet: it fails
        WRITE_DESIGN,
        "cd rtl && iverilog -g2012 -Wall -o /tmp/b.out *.sv ../verif/tb_rr_arbiter.sv 2>&1 | tee /tmp/compile.log",
        COMPILE,  # once per episode
    ])
    assert [reward for reward, _ in steps] == [0.0, 0.0, COMPILE_BONUS, 0.0]


def test_the_iverilog_commands_of_a_bash_command():
    """How a command's ``iverilog`` runs are found (no sandbox: parsing only)."""
    assert iverilog_commands("echo iverilog is great", "/code") == []
    assert iverilog_commands(f"{WRITE_DESIGN}\ncd rtl; time iverilog -o x *.sv 2> log", "/code") == [
        ("/code/rtl", ["-o", "x", "*.sv", "2", ">", "log"]),
    ]
    assert iverilog_commands("cd $HOME && iverilog x.v", "/code") == []  # a folder it cannot follow
