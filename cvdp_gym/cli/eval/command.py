"""``cvdp-gym eval``: score answers from a file or a model behind an OpenAI-compatible endpoint
(single answers, agentic episodes or refine episodes) and write the pass@k report.

The command checks that its options go together, picks a plan (:mod:`.plans`), runs it
under a progress bar and writes the report. Comprehension answers are scored as the
official tool scores them (``--parse-route``; cid009/cid010 by the LLM judge at
``--judge-base-url``, else labelled ``not_judged`` and left out of the scores unless
``--not-judged-as-zero``). Option errors exit 2; Ctrl-C exits 130 with
the finished samples kept in ``--out`` for ``--resume``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from cvdp_gym.cli._options import (
    BenchmarkDirOpt,
    CategoryOpt,
    DatasetArg,
    DifficultyOpt,
    ExecutorOpt,
    IdsOpt,
    JobsOpt,
    JudgeBaseUrlOpt,
    LenientOpt,
    ReposOpt,
    ResumeOpt,
    SandboxOpt,
    SeedOpt,
    SeedsOpt,
    TimeoutOpt,
    ToolchainOpt,
    VerdictOpt,
    console,
    fail,
    load_problems,
    progress_bar,
    repos_note,
)
from cvdp_gym.cli.eval.plans import (
    agentic_plan,
    endpoint_plan,
    eval_grader,
    eval_judge,
    file_plan,
    refine_plan,
)


def eval_command(
    dataset: DatasetArg = "bundled",
    benchmark_dir: BenchmarkDirOpt = None,
    responses: Annotated[Path | None, typer.Option(help="JSONL of answers: {id, response, sample?}.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name sent to --base-url.")] = None,
    samples: Annotated[int, typer.Option("--samples", "-n", help="Answers (with --agentic or --refine: episodes) per problem from --base-url.")] = 1,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.2,
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling top_p (default: the endpoint's; VerilogEval's published settings use 0.95 at temperature 0.85, 0.01 at 0).")] = None,
    max_tokens: Annotated[int, typer.Option(help="max_tokens per answer (with --agentic: per turn).")] = 4096,
    concurrency: Annotated[int, typer.Option(help="Chat requests in flight at once (with --agentic or --refine: episodes at once).")] = 8,
    agentic: Annotated[bool, typer.Option("--agentic", help="Play agentic problems as CVDP-Agentic-v0 episodes against --base-url.")] = False,
    tool_mode: Annotated[str, typer.Option(help="--agentic: native (the server's function calling) or a text format: qwen, qwen3_coder, harmony.")] = "native",
    max_turns: Annotated[int, typer.Option(help="--agentic: turns per episode before it is cut off and graded.")] = 50,
    agent: Annotated[str | None, typer.Option(help="Play agentic problems with a command-line coding agent in the sandbox instead of tool calls: a recipe (see `cvdp-gym agents`: mini-swe-agent, codex) or a bash command; it reaches only --base-url, through a proxy.")] = None,
    agent_dir: Annotated[Path | None, typer.Option(help="--agent CMD: a host folder holding the agent's installation, seen read-only at /agent (/agent/bin on PATH).")] = None,
    agent_time: Annotated[float, typer.Option(help="--agent: seconds an agent may work on one episode before it is stopped and the workspace graded.")] = 900.0,
    refine: Annotated[int | None, typer.Option("--refine", help="Play non-agentic problems as CVDP-Refine-v0 episodes of up to N answers against --base-url; the report gives pass@1 after attempt 1..N.")] = None,
    feedback: Annotated[str | None, typer.Option(help="--refine: the grader's feedback between answers: compile, interface (default) or tests (shows the hidden tests' messages).")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY", show_default=False, help="Bearer token for --base-url.")] = None,
    retries: Annotated[int, typer.Option(help="Retries of a request after 429/5xx/connection errors.")] = 5,
    retry_wait: Annotated[float, typer.Option(help="First backoff wait, seconds (doubles each retry).")] = 1.0,
    request_timeout: Annotated[float, typer.Option(help="Timeout of one chat request, seconds.")] = 600.0,
    ids: IdsOpt = None,
    category: CategoryOpt = None,
    difficulty: DifficultyOpt = None,
    reward: Annotated[str, typer.Option(help="Reward in results and report: shaped, partial or binary.")] = "shaped",
    k: Annotated[list[int] | None, typer.Option("-k", help="k values for pass@k (default: 1, 2, 5, 10, ... up to n, and n).")] = None,
    jobs: JobsOpt = 2,
    cache: Annotated[Path | None, typer.Option(help="SQLite grade cache (default: none; judge calls are always cached, here or in --out).")] = None,
    parse_route: Annotated[str, typer.Option(help="How comprehension answers are parsed, as the official tool's chat route (JSON repaired first, as for every published number) or its import route (a file of completions, parsed as given).")] = "chat",
    judge_base_url: JudgeBaseUrlOpt = None,
    judge_model: Annotated[str, typer.Option(help="The judge's model (default: the official tool's).")] = "o4-mini",
    judge_concurrency: Annotated[int, typer.Option(help="Judge requests in flight at once.")] = 16,
    not_judged_as_zero: Annotated[bool, typer.Option("--not-judged-as-zero", help="Count cid009/cid010 answers no judge scored as failed with 0 credit, as the official tool does (default: left out of the scores).")] = False,
    out: Annotated[Path, typer.Option(help="Folder for results.jsonl, report.{json,md,png} and the HTML report (html/index.html).")] = Path("runs/eval"),
    resume: ResumeOpt = False,
    timeout: TimeoutOpt = 300.0,
    lenient: LenientOpt = False,
    sandbox: SandboxOpt = "bubblewrap",
    toolchain: ToolchainOpt = None,
    executor: ExecutorOpt = None,
    repos: ReposOpt = None,
    seed: SeedOpt = None,
    seeds: SeedsOpt = 1,
    verdict: VerdictOpt = "testbench",
) -> None:
    """Score answers (a responses file, or a model behind an OpenAI-compatible endpoint: single answers, --agentic or --refine episodes) and report pass@k."""
    import time

    from cvdp_gym.eval import ChatSettings, Evaluator
    from cvdp_gym.eval.agentic import AgenticEvaluator, AgenticSettings
    from cvdp_gym.eval.refine import RefineSettings
    from cvdp_gym.grading import REWARDS, make_reward
    from cvdp_gym.grading.comprehension import NLTK_HINT, nltk_available
    from cvdp_gym.grading.feedback import DEFAULT_FEEDBACK
    from cvdp_gym.parsers.comprehension import ROUTES

    if (responses is None) == (base_url is None):
        raise fail("give either --responses FILE or --base-url URL --model NAME")
    if agent is not None:
        agentic = True
    elif agent_dir is not None:
        raise fail("--agent-dir goes with --agent CMD")
    if agent is not None and agent_time <= 0:
        raise fail("--agent-time must be positive")
    if agentic and responses is not None:
        raise fail("--agentic plays episodes against --base-url; it cannot grade a --responses file")
    if refine is not None and (agentic or responses is not None):
        raise fail("--refine plays refine episodes of non-agentic problems against --base-url; it cannot go with --agentic or --responses")
    if feedback is not None and refine is None:
        raise fail("--feedback applies to --refine episodes only")
    try:
        agentic_settings = AgenticSettings(tool_mode=tool_mode, max_turns=max_turns, concurrency=concurrency)
        refine_settings = RefineSettings(max_attempts=1 if refine is None else refine, feedback=feedback or DEFAULT_FEEDBACK, concurrency=concurrency)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if base_url is not None and not model:
        raise fail("--base-url needs --model")
    if reward not in REWARDS:
        raise fail(f"unknown reward {reward!r}; expected one of {', '.join(sorted(REWARDS))}")
    if samples < 1 or seeds < 1 or any(v < 1 for v in k or []):
        raise fail("-n, -k and --seeds must be at least 1")
    if parse_route not in ROUTES:
        raise fail(f"unknown --parse-route {parse_route!r}; expected one of {', '.join(ROUTES)}")
    if judge_concurrency < 1:
        raise fail("--judge-concurrency must be at least 1")
    data = load_problems(dataset, ids, category, difficulty, lenient, benchmark_dir=benchmark_dir)
    backing_note = _verdict_note(verdict, data.problems)
    if any(p.scoring == "bleu" for p in data.problems) and not nltk_available():
        raise fail(f"cid006/cid008 problems are selected: {NLTK_HINT}")
    meta: dict = {"source": f"responses {responses}", "dataset": data.source, "reward": reward, "verdict": verdict}
    judge = eval_judge(judge_base_url, judge_model, judge_concurrency, retries, retry_wait, cache or out / "judge-cache.sqlite")
    if any(p.scoring != "harness" for p in data.problems):
        meta.update(parse_route=_ROUTE_NAMES[parse_route], judge=f"{judge_model} at {judge_base_url}" if judge else "none")
    grader, reward_fn = eval_grader(
        timeout, cache, sandbox, toolchain, executor, jobs, repos,
        judge=judge, route=parse_route, seed=seed, seeds=seeds, verdict=verdict), make_reward(reward)
    try:  # everything from here on closes the executor and the judge, however it ends
        if responses is not None:
            keys, start, notes = file_plan(responses, data.problems)
        else:
            settings = ChatSettings(
                base_url=base_url or "", model=model or "", api_key=api_key, temperature=temperature,
                max_tokens=max_tokens, top_p=top_p, concurrency=concurrency, timeout_s=request_timeout,
                retries=retries, retry_wait_s=retry_wait,
            )
            meta.update(source=f"{model} at {base_url}", samples_per_problem=samples, temperature=temperature, max_tokens=max_tokens)
            if top_p is not None:
                meta["top_p"] = top_p
            if agent is not None:
                agent_settings = _agent_settings(agent, agent_dir, agent_time, concurrency, toolchain)
                keys, start, notes = agentic_plan(data.problems, settings, agentic_settings, samples, grader, reward_fn, agent_settings)
                meta.update(source=f"{model} at {base_url} (agent {agent_settings.agent.name})", agent=agent, agent_time_s=agent_time, concurrency=concurrency)
            elif agentic:
                keys, start, notes = agentic_plan(data.problems, settings, agentic_settings, samples, grader, reward_fn)
                meta.update(source=f"{model} at {base_url} (agentic, {tool_mode} tools)", max_turns=max_turns, concurrency=concurrency)
            elif refine is not None:
                keys, start, notes = refine_plan(data.problems, settings, refine_settings, samples, grader, reward_fn)
                meta.update(
                    source=f"{model} at {base_url} (refine, {refine_settings.feedback} feedback)",
                    max_attempts=refine, feedback=refine_settings.feedback, concurrency=concurrency,
                )
            else:
                keys, start, notes = endpoint_plan(data.problems, settings, samples)
        heavy = repos_note(data.problems, grader.runner)
        notes = [*notes, *(n for n in (heavy, backing_note) if n)]
        for note in notes:
            console.print(f"[yellow]note:[/] {note}")
        _mark_run(out, meta, resume)
        began = time.monotonic()
        if grader.executor is not None:
            jobs = max(jobs, grader.executor.capacity)
        episodes = agentic or refine is not None
        evaluator, options = (AgenticEvaluator, {}) if episodes else (Evaluator, {"jobs": jobs, "text_jobs": judge_concurrency})
        rows, results_path = _run_with_progress(
            lambda on_done: evaluator(grader, reward_fn, out, resume=resume, on_done=on_done, **options), keys, start
        )
    finally:
        if grader.executor is not None:
            grader.executor.close()
        if judge is not None:
            judge.close()
    meta.update(graded=len(rows), wall_s=round(time.monotonic() - began, 1), notes=notes)
    _report(rows, k, meta, out, not_judged_as_zero)
    html = _html_report(out)
    console.print(f"results in {results_path}; report in {out / 'report.md'}" + (f" and {html}" if html else ""))


def _verdict_note(verdict: str, problems: list) -> str | None:
    """A one-line error for an unknown verdict or one no problem can have; else a note on the
    problems ``testbench+reference`` cannot back (None: nothing to say)."""
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.grading.backed import BACKED, check_verdict, require_references

    try:
        if check_verdict(verdict) != BACKED:
            return None
        missing = require_references(problems)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if not missing:
        return f"verdict {BACKED}: a test-bench pass also needs equivalence with the reference; the benchmark figures stay the test bench's"
    return (f"verdict {BACKED}: {len(missing)} problem(s) have no reference to check against (a test-bench pass there is "
            f"scored no_reference, excluded), e.g. {missing[0][0]}: {missing[0][1]}")


def _agent_settings(agent: str, agent_dir: Path | None, agent_time: float, concurrency: int, toolchain: str | None):  # type: ignore[no-untyped-def]
    """The agent a run plays with (a recipe by name, or a command with its folder),
    installed for the sandbox before the first episode."""
    from cvdp_gym.agents.install import ensure_installed
    from cvdp_gym.agents.registry import agent_from_option
    from cvdp_gym.errors import CvdpGymError
    from cvdp_gym.eval.cli_agent import AgentSettings
    from cvdp_gym.sandbox.bwrap import BubblewrapSandbox
    from cvdp_gym.toolchain import detect

    try:
        recipe = agent_from_option(agent, agent_dir)
        with console.status(f"installing {recipe.name} for the sandbox (once)"):
            ensure_installed(recipe, BubblewrapSandbox(detect(toolchain)), quiet=True)
    except CvdpGymError as exc:
        raise fail(str(exc)) from None
    return AgentSettings(recipe, time_limit_s=agent_time, concurrency=concurrency)


def _run_with_progress(make_evaluator: Callable, keys: list[tuple[str, int]], start: Callable) -> tuple[list[dict], Path]:
    """Run the evaluation under a progress bar; rows in key order and the results path."""
    import asyncio

    progress = progress_bar("eval")
    with progress:
        task = progress.add_task("eval", total=len(keys), last="")
        ev = make_evaluator(lambda r: progress.update(task, advance=1, last=f"{r['id']}#{r['sample']}: {r['verdict']}"))
        progress.update(task, completed=sum(ev.is_done(pid, s) for pid, s in keys))
        try:
            return asyncio.run(start(ev)), ev.results_path
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted:[/] finished samples are in {ev.results_path}; rerun with --resume")
            raise typer.Exit(130) from None


_ROUTE_NAMES = {
    "chat": "chat: as the official tool's OpenAI-chat model route (JSON repaired before parsing)",
    "import": "import: as the official tool's local-import route (parsed as given)",
}


def _report(rows: list[dict], k: list[int] | None, meta: dict, out: Path, not_judged_as_zero: bool = False) -> None:
    """Choose the k values, then write and print the report."""
    from cvdp_gym.eval import build_report, default_ks, print_report, write_report
    from cvdp_gym.eval.report import choose_ks
    from cvdp_gym.eval.run import RETRIED
    from cvdp_gym.grading.result import NOT_JUDGED

    unjudged = [r for r in rows if r["verdict"] == NOT_JUDGED]
    if unjudged and not_judged_as_zero:
        meta["notes"].append(f"{len(unjudged)} cid009/cid010 sample(s) not judged count as failed with 0 credit, as the official tool counts them (--not-judged-as-zero)")
    elif unjudged:
        rows = [r for r in rows if r["verdict"] != NOT_JUDGED]
        problems = len({r["id"] for r in unjudged})
        meta["notes"].append(
            f"{len(unjudged)} sample(s) of {problems} cid009/cid010 problem(s) were not judged (no --judge-base-url) and are left out "
            "of every figure; --not-judged-as-zero counts them as the official tool does (0 credit)"
        )
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["id"]] = counts.get(row["id"], 0) + 1
    most = max(counts.values(), default=0)
    ks, dropped = choose_ks(k, most, default_ks(most))
    if dropped:
        meta["notes"].append(f"pass@k not reported for k = {', '.join(map(str, dropped))}: no problem has that many samples")
    flaky = sorted({f"{r['id']}#{r['sample']}" for r in rows if r.get("flaky")})
    if flaky:
        shown = ", ".join(flaky[:10]) + (", ..." if len(flaky) > 10 else "")
        meta["notes"].append(f"{len(flaky)} answer(s) are flaky (their harness draws at random and the verdict changed with the seed; counted as failed): {shown}")
    randomised = sum(bool((r.get("grade") or {}).get("randomised")) for r in rows)
    if randomised and not flaky and max((len((r.get("grade") or {}).get("seed_verdicts") or []) for r in rows), default=0) < 2:
        meta["notes"].append(f"{randomised} answer(s) went to harnesses that draw at random and were graded with one seed each (recorded per row); --seeds K tests them for flakiness")
    retried = sum(r["verdict"] in RETRIED for r in rows)
    if retried:
        meta["notes"].append(f"{retried} sample(s) could not be fetched or graded and count as failures; --resume tries them again")
    report = build_report(rows, ks, meta)
    png_skipped = write_report(report, out)
    print_report(report, console)
    if png_skipped:
        console.print(f"[yellow]note:[/] {png_skipped}")


def _html_report(out: Path) -> Path | None:
    """The static HTML report in ``out/html`` (as ``cvdp-gym report`` writes it); a failure
    is one warning line, never the end of a run whose results are already written."""
    from rich.markup import escape

    try:
        from cvdp_gym.report import write_html_report

        return write_html_report([out], out / "html")
    except Exception as exc:  # the results and report.md are written; the HTML is extra
        console.print(f"[yellow]warning:[/] HTML report not written ({escape(f'{type(exc).__name__}: {exc}')}); `cvdp-gym report {escape(str(out))}` retries", soft_wrap=True)
        return None


def _mark_run(out: Path, meta: dict, resume: bool) -> None:
    """Record what this run scores, and warn when --resume would mix in another source's samples."""
    import json

    path, mark = out / "run.json", {key: meta[key] for key in ("source", "dataset")}
    if resume and path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            before = {}
        for key, value in mark.items():
            if before.get(key, value) != value:
                console.print(f"[yellow]warning:[/] resuming a run whose {key} was {before[key]!r}, now {value!r}")
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(mark) + "\n", encoding="utf-8")
