"""``cvdp-gym agents``, ``agents install`` and ``agents check``: the command-line agents
``eval --agent`` can run, installed once and checked end to end.

``check`` plays one bundled agentic problem with the agent against a scripted model that
writes the given answer (the reference by default, or a known-wrong candidate) and prints
the verdict: the agent, its installation, the sandbox, the proxy and grading all work when
the reference passes and the wrong answer fails.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cvdp_gym.cli._options import ToolchainOpt, console, fail

DEFAULT_PROBLEM = "cvdp_gym_agentic_crc8_0001"


def agents_main(ctx: typer.Context) -> None:
    """Command-line coding agents for `eval --agent`: without a subcommand, the list."""
    if ctx.invoked_subcommand is None:
        agents_list()


def agents_list() -> None:
    """The agents known by name, where each comes from and where it is installed."""
    from cvdp_gym.agents.install import agents_dir
    from cvdp_gym.agents.registry import AGENTS

    table = Table(title=f"command-line agents (installed under {agents_dir()})")
    for column in ("name", "source", "installed"):
        table.add_column(column)
    for name, recipe_type in AGENTS.items():
        recipe = recipe_type()
        found = sorted(p.name for p in agents_dir().glob(f"{recipe.name}-{recipe.version}*") if p.is_dir())
        table.add_row(name, recipe.source, ", ".join(found) or "no (installed on first use)")
    console.print(table)
    console.print("Any other agent: `cvdp-gym eval --agent 'COMMAND' --agent-dir FOLDER` (docs/agents.md).")


def agents_install(
    names: Annotated[list[str], typer.Argument(help="Agents to install (see `cvdp-gym agents`).")],
    toolchain: ToolchainOpt = None,
) -> None:
    """Install agents for the sandbox now (else the first episode does)."""
    from cvdp_gym.agents.install import ensure_installed
    from cvdp_gym.agents.registry import AGENTS
    from cvdp_gym.errors import CvdpGymError
    from cvdp_gym.sandbox.bwrap import BubblewrapSandbox
    from cvdp_gym.toolchain import detect

    unknown = [n for n in names if n not in AGENTS]
    if unknown:
        raise fail(f"unknown agent(s) {', '.join(unknown)}; known: {', '.join(AGENTS)}")
    try:
        sandbox = BubblewrapSandbox(detect(toolchain))
        for name in names:
            with console.status(f"installing {name}"):
                path = ensure_installed(AGENTS[name](), sandbox, quiet=True)
            console.print(f"{name}: {path}")
    except CvdpGymError as exc:
        raise fail(str(exc)) from None


def agents_check(
    name: Annotated[str, typer.Argument(help="An agent (see `cvdp-gym agents`).")],
    problem: Annotated[str, typer.Option(help="A bundled agentic problem.")] = DEFAULT_PROBLEM,
    candidate: Annotated[str | None, typer.Option(help="Write this bundled known-wrong candidate instead of the reference (e.g. functional_bug); the check then expects a failure.")] = None,
    time_limit: Annotated[float, typer.Option(help="Seconds the agent may take.")] = 300.0,
    toolchain: ToolchainOpt = None,
) -> None:
    """Play a bundled problem with the agent against a scripted model; exit 1 if the verdict is not the expected one."""
    import time

    import gymnasium as gym

    from cvdp_gym.agents.episode import play_agent
    from cvdp_gym.agents.registry import AGENTS
    from cvdp_gym.agents.scripted import ScriptedModel, writing_steps
    from cvdp_gym.data import bundled_candidates, load_dataset
    from cvdp_gym.errors import CvdpGymError

    if name not in AGENTS:
        raise fail(f"unknown agent {name!r}; known: {', '.join(AGENTS)}")
    data = load_dataset("bundled")
    if problem not in data.ids or not data[problem].agentic:
        raise fail(f"{problem!r} is not a bundled agentic problem")
    if candidate is None:
        files = data[problem].reference
    else:
        found = {c.name: c.files for c in bundled_candidates() if c.problem_id == problem}
        if candidate not in found:
            raise fail(f"{problem} has no candidate {candidate!r}; it has: {', '.join(sorted(found))}")
        files = found[candidate]
    recipe = AGENTS[name]()
    env = gym.make("CVDP-Agentic-v0", dataset="bundled", toolchain=toolchain)
    try:
        env.reset(options={"problem_id": problem})
        began = time.monotonic()
        with ScriptedModel(writing_steps(files, recipe.finish_command)) as model, console.status(f"{name} at work on {problem}"):
            _, reward, _, _, info = play_agent(env, recipe, endpoint=model.url, model="scripted", time_limit_s=time_limit)
    except CvdpGymError as exc:
        raise fail(str(exc)) from None
    finally:
        env.close()
    agent = info["agent"]
    table = Table(title=f"{name} on {problem} ({'reference' if candidate is None else candidate})")
    table.add_column("field")
    table.add_column("value")
    for key, value in (
        ("verdict", info.get("failure_class") or "passed"), ("reward", f"{reward:g}"), ("end", agent["end_reason"]),
        ("exit code", agent["exit_code"]), ("model requests", agent["requests"]), ("refused requests", agent["refused"]),
        ("tokens (prompt / completion)", f"{agent['prompt_tokens']} / {agent['completion_tokens']}"),
        ("agent seconds", agent["wall_s"]), ("episode seconds", round(time.monotonic() - began, 1)),
    ):
        table.add_row(key, str(value))
    console.print(table)
    expected = candidate is None
    if bool(info.get("passed")) != expected:
        console.print(f"[red]unexpected verdict[/]; the agent's output ends:\n{agent['output'][-2000:]}", soft_wrap=True)
        raise typer.Exit(1)
    console.print("[green]ok[/]: " + ("the reference passed" if expected else "the wrong design failed"))
