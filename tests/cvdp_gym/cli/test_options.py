"""Option groups: the rules of which options go together (checked once, on real option
objects), and the typer commands :func:`grouped` builds from the groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner, Result

from cvdp_gym.cli import app
from cvdp_gym.cli.eval.options import EvalOptions
from cvdp_gym.cli.options import (
    AnswerOptions,
    EndpointOptions,
    EpisodeOptions,
    Group,
    HarnessOptions,
    JudgeOptions,
    QualityOptions,
    SamplingOptions,
    ServiceOptions,
    grouped,
)
from cvdp_gym.errors import ConfigError

ENDPOINT = EndpointOptions(base_url="http://localhost:8000/v1", model="m")
ANSWERS = Path("answers.jsonl")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (EvalOptions(), "give one of --responses FILE, --references or --base-url URL --model NAME"),
        (EvalOptions(responses=ANSWERS, endpoint=ENDPOINT), "give one of --responses FILE, --references or --base-url URL --model NAME"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(agent_dir=Path("a"))), "--agent-dir goes with --agent CMD"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(agent="codex", agent_time=0)), "--agent-time must be positive"),
        (EvalOptions(responses=ANSWERS, episodes=EpisodeOptions(agentic=True)), "--agentic plays episodes against --base-url; it cannot grade a --responses file"),
        (EvalOptions(responses=ANSWERS, episodes=EpisodeOptions(agent="codex")), "--agentic plays episodes against --base-url; it cannot grade a --responses file"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(agentic=True, refine=2)), "--refine plays refine episodes of non-agentic problems against --base-url; it cannot go with --agentic or --responses"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(feedback="tests")), "--feedback applies to --refine episodes only"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(tool_mode="smoke")), "unknown tool mode 'smoke'"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(refine=0)), "--refine and --concurrency must be at least 1"),
        (EvalOptions(endpoint=EndpointOptions(base_url="http://localhost:8000/v1")), "--base-url needs --model"),
        (EvalOptions(responses=ANSWERS, reward="sparse"), "unknown reward 'sparse'; expected one of"),
        (EvalOptions(endpoint=ENDPOINT, sampling=SamplingOptions(samples=0)), "-n, -k and --seeds must be at least 1"),
        (EvalOptions(responses=ANSWERS, k=[1, 0]), "-n, -k and --seeds must be at least 1"),
        (EvalOptions(responses=ANSWERS, harness=HarnessOptions(seeds=0)), "-n, -k and --seeds must be at least 1"),
        (EvalOptions(responses=ANSWERS, judge=JudgeOptions(parse_route="api")), "unknown --parse-route 'api'; expected one of chat, import"),
        (EvalOptions(responses=ANSWERS, judge=JudgeOptions(judge_concurrency=0)), "--judge-concurrency must be at least 1"),
        (EvalOptions(references=True, responses=ANSWERS), "give one of --responses FILE, --references or --base-url URL --model NAME"),
        (EvalOptions(references=True, episodes=EpisodeOptions(refine=2)), "--references grades the problems' reference solutions; it cannot go with --agentic or --refine"),
        (EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(refine=2), quality=QualityOptions("asic")), "--quality measures single answers"),
        (EvalOptions(references=True, quality=QualityOptions("sta")), "unknown quality flow 'sta'; expected asic or fpga"),
        (EvalOptions(references=True, quality=QualityOptions("asic", clock_ns=0)), "the quality clock must be a positive period in ns"),
    ],
)
def test_eval_options_that_do_not_go_together(options, message):
    with pytest.raises(ConfigError) as raised:
        options.validate()
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    "options",
    [
        EvalOptions(responses=ANSWERS),
        EvalOptions(endpoint=ENDPOINT),
        EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(agentic=True)),
        EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(agent="codex", agent_dir=Path("a"))),
        EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(refine=3, feedback="tests")),
    ],
)
def test_eval_options_that_go_together(options):
    options.validate()


def test_eval_plays_episodes_with_an_agent_without_agentic():
    options = EvalOptions(endpoint=ENDPOINT, episodes=EpisodeOptions(agent="codex"))
    assert options.episodes.plays_agentic and options.plays_episodes
    assert not EvalOptions(endpoint=ENDPOINT).plays_episodes


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ServiceOptions(default_reward="sparse"), "unknown --default-reward 'sparse'; expected one of shaped, partial, binary, quality, kills"),
        (ServiceOptions(per_client=-1), "--per-client must be at least 0"),
        (ServiceOptions(workers=0), "--workers must be at least 1 and --queue at least 0"),
        (ServiceOptions(queue=-1), "--workers must be at least 1 and --queue at least 0"),
        (AnswerOptions(answer=Path("a.txt"), run=Path("runs/eval")), "give --answer or --run, not both"),
        (AnswerOptions(sample=1), "--sample goes with --run"),
    ],
)
def test_service_and_debug_options_that_do_not_go_together(options, message):
    with pytest.raises(ConfigError) as raised:
        options.validate()
    assert str(raised.value) == message


def test_an_option_rule_is_one_error_line_and_exit_2_on_the_command_line():
    done = CliRunner().invoke(app, ["eval", "--base-url", "http://localhost:8000/v1"])
    assert (done.exit_code, done.output.strip()) == (2, "error: --base-url needs --model")


# ---------------------------------------------------------------- grouped()


@dataclass(frozen=True)
class Inner:
    """A group nested in another."""

    depth: Annotated[int, typer.Option(help="How deep.")] = 1


@dataclass(frozen=True)
class Outer:
    """A group with a nested group."""

    name: Annotated[str, typer.Option(help="A name.")] = "x"
    size: Annotated[int, typer.Option("--size", "-s", help="A size.")] = 3
    inner: Inner = field(default_factory=Inner)


def _run(command, *args: str) -> Result:
    one = typer.Typer()
    one.command()(command)
    one.command("other")(lambda: None)  # two commands: the first is invoked by name
    return CliRunner().invoke(one, [command.__name__, *args])


def test_grouped_gives_one_option_per_field_and_builds_the_groups():
    seen: list = []

    @grouped
    def show(word: Annotated[str, typer.Argument()] = "w", *, outer: Outer, flag: bool = False) -> None:
        seen.append((word, outer, flag))

    assert _run(show, "hi", "--name", "n", "-s", "5", "--depth", "7", "--flag").exit_code == 0
    assert _run(show).exit_code == 0
    assert seen == [("hi", Outer("n", 5, Inner(7)), True), ("w", Outer(), False)]
    help_text = _run(show, "--help").output
    assert all(flag in help_text for flag in ("--name", "--size", "-s", "--depth", "--flag", "A size.", "How deep."))


def test_a_group_shows_only_the_fields_named_with_its_own_defaults():
    seen: list = []

    @grouped
    def show(*, outer: Annotated[Outer, Group(only=("size",), size=9)]) -> None:
        seen.append(outer)

    assert _run(show).exit_code == 0
    assert _run(show, "--name", "n").exit_code == 2  # not an option of this command
    assert seen == [Outer(size=9)]
    assert "[default: 9]" in _run(show, "--help").output


def test_grouped_refuses_an_option_declared_twice_or_an_unknown_field():
    with pytest.raises(TypeError, match="declared twice: name"):

        @grouped
        def twice(*, outer: Outer, name: str = "") -> None: ...

    with pytest.raises(TypeError, match="has no field"):

        @grouped
        def bad(*, outer: Annotated[Outer, Group(only=("colour",))]) -> None: ...
