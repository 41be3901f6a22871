"""``cvdp-gym export-bundled``, ``cvdp-gym export harbor``, ``cvdp-gym export verl`` and
``cvdp-gym export nemo-gym``: write
problems in another tool's format: the bundled problems as a CVDP JSONL file (official record
shapes, so other CVDP tools can read them), any dataset as Harbor task folders
(:mod:`cvdp_gym.integrations.harbor`) or as veRL's Parquet rows
(:mod:`cvdp_gym.integrations.verl`), or as NeMo-Gym's JSONL rows for ``cvdp-gym serve``
(:func:`cvdp_gym.service.nemo.nemo_gym_row`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cvdp_gym.cli._options import (
    BenchmarkDirOpt,
    CategoryOpt,
    DatasetArg,
    DifficultyOpt,
    IdsOpt,
    LenientOpt,
    console,
    fail,
    load_problems,
)


def export_bundled(out: Annotated[Path, typer.Argument(help="Where to write the JSONL.")]) -> None:
    """Write the bundled problems as a CVDP JSONL file (official record shapes)."""
    from cvdp_gym.data.bundle import export_jsonl

    console.print(f"wrote {export_jsonl(out)} problems to {out}")


def export_harbor(
    dataset: DatasetArg,
    out: Annotated[Path, typer.Argument(help="Folder to write the task folders in (one per problem, named by its id).")],
    ids: IdsOpt = None,
    category: CategoryOpt = None,
    difficulty: DifficultyOpt = None,
    base_image: Annotated[
        str | None, typer.Option(help="The image each task's Dockerfile builds FROM (default: the official nvidia/cvdp-sim:v1.0.0; or the stand-in `cvdp-gym toolchain docker-image` makes).")
    ] = None,
    install: Annotated[
        str | None, typer.Option(help="The Dockerfile's RUN line that installs cvdp-gym (default: pip install of this version).")
    ] = None,
    reward: Annotated[str, typer.Option(help="The reward test.sh writes: shaped (default), partial or binary.")] = "shaped",
    lenient: LenientOpt = False,
    benchmark_dir: BenchmarkDirOpt = None,
) -> None:
    """Write a Harbor task folder per problem (task.toml, instruction.md, environment/, tests/, solution/)."""
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.integrations.harbor import export_tasks, fold_harness
    from cvdp_gym.sandbox.docker_images import OFFICIAL_IMAGE

    data = load_problems(dataset, ids, category, difficulty, lenient, benchmark_dir=benchmark_dir)
    try:
        written, left_out = export_tasks(
            data, out, base_image=base_image or OFFICIAL_IMAGE, install=install, reward=reward
        )
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for problem_id, reason in sorted(left_out.items()):
        console.print(f"[yellow]left out[/] {problem_id}: {reason}", soft_wrap=True)
    exported = {folder.name for folder in written}
    for problem in data.problems:
        reason = fold_harness(problem).reason if problem.id in exported else None
        if reason:
            console.print(f"[yellow]not one container[/] {problem.id}: {reason} (task.toml: one_container = false)", soft_wrap=True)
    console.print(f"wrote {len(written)} Harbor task folders to {out}")


def export_verl(
    dataset: DatasetArg,
    out: Annotated[Path, typer.Argument(help="The Parquet file to write (what veRL's data.train_files names).")],
    ids: IdsOpt = None,
    category: CategoryOpt = None,
    difficulty: DifficultyOpt = None,
    agentic: Annotated[bool, typer.Option(help="Rows for the agentic environment (played by the cvdp_gym_agentic agent loop).")] = False,
    split: Annotated[str, typer.Option(help="The split name each row's extra_info records.")] = "train",
) -> None:
    """Write veRL's RL rows (prompt, reward_model.ground_truth, extra_info) as Parquet."""
    from cvdp_gym.errors import CvdpGymError
    from cvdp_gym.integrations.verl import write_dataset

    try:
        path = write_dataset(out, str(dataset), agentic=agentic, split=split, ids=ids, categories=category, difficulty=difficulty)
    except (CvdpGymError, ImportError) as exc:
        raise fail(str(exc)) from None
    console.print(f"wrote veRL rows to {path}")


def export_nemo_gym(
    dataset: DatasetArg,
    out: Annotated[Path, typer.Argument(help="The JSONL file to write (NeMo-Gym's rows; verifiers' NeMoGymTaskset reads it).")],
    ids: IdsOpt = None,
    category: CategoryOpt = None,
    difficulty: DifficultyOpt = None,
    lenient: LenientOpt = False,
    benchmark_dir: BenchmarkDirOpt = None,
) -> None:
    """Write NeMo-Gym rows (responses_create_params, verifier_metadata) for `cvdp-gym serve`'s NeMo-Gym routes."""
    import json

    from cvdp_gym.service.nemo import nemo_gym_row

    data = load_problems(dataset, ids, category, difficulty, lenient, benchmark_dir=benchmark_dir)
    rows = [json.dumps(nemo_gym_row(problem), ensure_ascii=False) for problem in data]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    console.print(f"wrote {len(rows)} NeMo-Gym rows to {out}")
