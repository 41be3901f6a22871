"""``cvdp-gym eval``: score answers from a file or a model behind an OpenAI-compatible endpoint
(single answers, agentic episodes or refine episodes) and write the pass@k report.

The command checks that its options go together (:class:`.options.EvalOptions`), picks a plan (:mod:`.plans`), runs it
under a progress bar and writes the report. Comprehension answers are scored as the
official tool scores them (``--parse-route``; cid009/cid010 by the LLM judge at
``--judge-base-url``, else labelled ``not_judged`` and left out of the scores unless
``--not-judged-as-zero``). Option errors exit 2; Ctrl-C exits 130 with
the finished samples kept in ``--out`` for ``--resume``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cvdp_gym.cli._options import (
    DatasetArg,
    console,
    executor_option,
    fail,
    grader_of,
    progress_bar,
    repos_note,
)
from cvdp_gym.cli.eval.options import EvalOptions
from cvdp_gym.cli.eval.plans import (
    agentic_plan,
    endpoint_plan,
    eval_judge,
    file_plan,
    reference_plan,
    refine_plan,
)
from cvdp_gym.cli.options import grouped

if TYPE_CHECKING:
    from cvdp_gym.grading.grader import Grader


@grouped
def eval_command(dataset: DatasetArg = "bundled", *, options: EvalOptions) -> None:
    """Score answers (a responses file, or a model behind an OpenAI-compatible endpoint: single answers, --agentic or --refine episodes) and report pass@k."""
    import time

    from cvdp_gym.errors import ConfigError
    from cvdp_gym.eval import Evaluator
    from cvdp_gym.eval.agentic import AgenticEvaluator
    from cvdp_gym.grading import make_reward
    from cvdp_gym.grading.comprehension import NLTK_HINT, nltk_available
    from cvdp_gym.tasks.names import BENCH_TASKS, DESIGN

    try:
        options.validate()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    endpoint, judging, harness, out, jobs = options.endpoint, options.judge, options.harness, options.out, options.harness.jobs
    data = options.problems.load(dataset, agentic=options.episodes.plays_agentic)
    backing_note = _verdict_note(harness.verdict, data.problems)
    if any(p.scoring == "bleu" for p in data.problems) and not nltk_available():
        raise fail(f"cid006/cid008 problems are selected: {NLTK_HINT}")
    meta: dict = {"source": f"responses {options.responses}", "dataset": data.source, "reward": options.chosen_reward, "verdict": harness.verdict}
    judge = eval_judge(
        judging.judge_base_url, judging.judge_model, judging.judge_concurrency, endpoint.retries, endpoint.retry_wait,
        options.cache or out / "judge-cache.sqlite",
    )
    if any(p.scoring != "harness" for p in data.problems):
        meta.update(parse_route=_ROUTE_NAMES[judging.parse_route], judge=f"{judging.judge_model} at {judging.judge_base_url}" if judge else "none")
    seed, task_notes = _task_seed(options, data.problems, meta)
    # One grader for the whole run: no cache unless asked (a cache would hide re-grading);
    # quality measurements are kept in --cache, else in the run folder.
    grader = grader_of(harness.grader_settings(
        cache=options.cache, executor=executor_option(harness.executor, jobs), judge=judge, parse_route=judging.parse_route,
        harness_seed=seed, quality=options.quality_settings(), quality_cache=options.cache or out / "quality-cache.sqlite",
    ))
    reward_fn = make_reward(options.chosen_reward)
    _quality_meta(grader, meta)
    try:  # everything from here on closes the executor and the judge, however it ends
        if options.references and options.problems.posing.task in BENCH_TASKS:
            sources = {p.id: p for p in dataclasses.replace(options.problems, task=DESIGN).load(dataset)}
            keys, start, notes = reference_plan(data.problems, sources, seed or 0)
            meta["source"] = "the benchmarks' own test benches (golden)"
        else:
            keys, start, notes = _plan(options, data.problems, grader, reward_fn, meta)
        notes = [*task_notes, *notes]
        heavy = repos_note(data.problems, grader.runner)
        notes = [*notes, *(n for n in (heavy, backing_note) if n)]
        for note in notes:
            console.print(f"[yellow]note:[/] {note}")
        _mark_run(out, meta, options.resume)
        began = time.monotonic()
        if grader.executor is not None:
            jobs = max(jobs, grader.executor.capacity)
        evaluator, extra = (AgenticEvaluator, {}) if options.plays_episodes else (Evaluator, {"jobs": jobs, "text_jobs": judging.judge_concurrency})
        rows, results_path = _run_with_progress(
            lambda on_done: evaluator(grader, reward_fn, out, resume=options.resume, on_done=on_done, **extra), keys, start
        )
    finally:
        if grader.executor is not None:
            grader.executor.close()
        if judge is not None:
            judge.close()
    meta.update(graded=len(rows), wall_s=round(time.monotonic() - began, 1), notes=notes)
    _report(rows, options.k, meta, out, judging.not_judged_as_zero)
    html = _html_report(out)
    console.print(f"results in {results_path}; report in {out / 'report.md'}" + (f" and {html}" if html else ""))


def _task_seed(options: EvalOptions, problems: list, meta: dict) -> tuple[int | None, list[str]]:
    """The harness seed: a verification task draws its seeded bugs with it, so every answer (and
    the golden row) is scored on the same ones: ``--seed``, else 0."""
    from cvdp_gym.tasks.names import ASSERTION, DESIGN

    seed = options.harness.seed
    task = options.problems.posing.task
    if task == DESIGN:
        return seed, []
    meta["task"] = task
    if task == ASSERTION and options.references:
        raise fail("--references with --task assertion: the benchmarks have no golden assertions to score")
    if seed is not None:
        return seed, []
    return 0, [f"--task {task}: every answer is scored on the bugs drawn with seed 0 (--seed draws others)"]


def _quality_meta(grader: Grader, meta: dict) -> None:
    """The grader's quality stage (``--quality``), if any, described in ``meta``."""
    stage = grader.quality
    if stage is None:
        return
    settings = stage.settings
    meta["quality"] = {"flow": settings.flow, "clock_ns": settings.clock_ns, "tools": "ready" if stage.tools else "absent"}
    if settings.flow == "asic" and stage.liberty is not None:
        meta["quality"]["liberty"] = f"{stage.liberty.name} ({stage.liberty.sha256[:12]})"
    else:
        meta["quality"]["device"] = f"{settings.device} {settings.package}"


def _plan(options: EvalOptions, problems: list, grader: Grader, reward_fn: Callable, meta: dict) -> tuple[list[tuple[str, int]], Callable, list[str]]:
    """The plan the options ask for (a responses file, single answers, agentic, agent or
    refine episodes), with what it says about the run added to ``meta``."""
    from cvdp_gym.eval import ChatSettings

    endpoint, sampling, episodes = options.endpoint, options.sampling, options.episodes
    base_url, model = endpoint.base_url, endpoint.model
    if options.responses is not None:
        return file_plan(options.responses, problems)
    if options.references:
        meta["source"] = "the problems' reference solutions"
        return reference_plan(problems)
    settings = ChatSettings(
        base_url=base_url or "", model=model or "", api_key=endpoint.api_key, temperature=sampling.temperature,
        max_tokens=sampling.max_tokens, top_p=sampling.top_p, concurrency=sampling.concurrency,
        timeout_s=endpoint.request_timeout, retries=endpoint.retries, retry_wait_s=endpoint.retry_wait,
    )
    meta.update(source=f"{model} at {base_url}", samples_per_problem=sampling.samples, temperature=sampling.temperature, max_tokens=sampling.max_tokens)
    if sampling.top_p is not None:
        meta["top_p"] = sampling.top_p
    if episodes.agent is not None:
        agent_settings = _agent_settings(episodes.agent, episodes.agent_dir, episodes.agent_time, sampling.concurrency, options.harness.toolchain)
        meta.update(source=f"{model} at {base_url} (agent {agent_settings.agent.name})", agent=episodes.agent, agent_time_s=episodes.agent_time, concurrency=sampling.concurrency)
        return agentic_plan(problems, settings, options.agentic_settings(), sampling.samples, grader, reward_fn, agent_settings)
    if episodes.plays_agentic:
        meta.update(source=f"{model} at {base_url} (agentic, {episodes.tool_mode} tools)", max_turns=episodes.max_turns, concurrency=sampling.concurrency)
        return agentic_plan(problems, settings, options.agentic_settings(), sampling.samples, grader, reward_fn)
    if episodes.refine is not None:
        refine_settings = options.refine_settings()
        meta.update(
            source=f"{model} at {base_url} (refine, {refine_settings.feedback} feedback)",
            max_attempts=episodes.refine, feedback=refine_settings.feedback, concurrency=sampling.concurrency,
        )
        return refine_plan(problems, settings, refine_settings, sampling.samples, grader, reward_fn)
    return endpoint_plan(problems, settings, sampling.samples)


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
