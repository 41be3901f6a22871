"""``cvdp-gym``: check harnesses, diagnose the toolchain, evaluate models.

This module is the app and its wiring only (the console script is ``cvdp_gym.cli:app``);
each command lives in the module of its group, options shared by several commands in
:mod:`cvdp_gym.cli._options` and the option groups (dataclasses a command takes instead of
a long list of parameters) in :mod:`cvdp_gym.cli.options`:

- ``doctor``, ``toolchain install|pack|path|docker-image``: :mod:`cvdp_gym.cli.toolchain`
- ``check``: :mod:`cvdp_gym.cli.check` (its library logic: :mod:`cvdp_gym.check`)
- ``audit``: :mod:`cvdp_gym.cli.audit` (its library logic: :mod:`cvdp_gym.audit`)
- ``export-bundled``, ``export harbor``, ``export verl``, ``export nemo-gym``: :mod:`cvdp_gym.cli.export` (the library logic: :mod:`cvdp_gym.integrations.harbor`, :mod:`cvdp_gym.integrations.verl`)
- ``coverage``: :mod:`cvdp_gym.cli.coverage` (its library logic: :mod:`cvdp_gym.coverage`)
- ``decontaminate``: :mod:`cvdp_gym.cli.decontaminate` (its library logic: :mod:`cvdp_gym.decontaminate`)
- ``parity``: :mod:`cvdp_gym.cli.parity` (its library logic: :mod:`cvdp_gym.parity`)
- ``eval``: :mod:`cvdp_gym.cli.eval`
- ``compare``: :mod:`cvdp_gym.cli.compare` (its library logic: :mod:`cvdp_gym.eval.compare`)
- ``rescore``: :mod:`cvdp_gym.cli.rescore` (its library logic: :mod:`cvdp_gym.eval.rescore`)
- ``debug``: :mod:`cvdp_gym.cli.debug` (its library logic: :mod:`cvdp_gym.debug`)
- ``report``: :mod:`cvdp_gym.cli.report` (its library logic: :mod:`cvdp_gym.report`)
- ``serve``: :mod:`cvdp_gym.cli.serve` (its library logic: :mod:`cvdp_gym.service`)
- ``agents``, ``agents install|check``: :mod:`cvdp_gym.cli.agents` (its library logic: :mod:`cvdp_gym.agents`)
- ``benchmarks list|fetch|path``: :mod:`cvdp_gym.cli.benchmarks` (its library logic: :mod:`cvdp_gym.data.benchmarks`)
- ``quality list|fetch|measure``: :mod:`cvdp_gym.cli.quality` (its library logic: :mod:`cvdp_gym.quality`, :mod:`cvdp_gym.grading.quality`)
"""

from __future__ import annotations

import typer

from cvdp_gym.cli.agents import agents_check, agents_install, agents_list, agents_main
from cvdp_gym.cli.audit import audit_command
from cvdp_gym.cli.benchmarks import benchmarks_fetch, benchmarks_list, benchmarks_path
from cvdp_gym.cli.check import check_command
from cvdp_gym.cli.compare import compare_command
from cvdp_gym.cli.coverage import coverage_command
from cvdp_gym.cli.debug import debug_command
from cvdp_gym.cli.decontaminate import decontaminate_command
from cvdp_gym.cli.eval import eval_command
from cvdp_gym.cli.export import export_bundled, export_harbor, export_nemo_gym, export_verl
from cvdp_gym.cli.parity import parity_command
from cvdp_gym.cli.quality import quality_fetch, quality_list, quality_measure
from cvdp_gym.cli.report import report_command
from cvdp_gym.cli.rescore import rescore_command
from cvdp_gym.cli.serve import serve_command
from cvdp_gym.cli.toolchain import (
    doctor,
    toolchain_docker_image,
    toolchain_install,
    toolchain_pack,
    toolchain_path,
)

__all__ = ["app"]

app = typer.Typer(
    help="RTL benchmarks for RL (CVDP, VerilogEval, RTLLM): run harnesses on the pinned simulation root or in Docker, check datasets, evaluate models.",
    no_args_is_help=True,
    add_completion=False,
)
toolchain_app = typer.Typer(help="Install and inspect the local simulation toolchain.", no_args_is_help=True)
app.add_typer(toolchain_app, name="toolchain")
benchmarks_app = typer.Typer(help="The benchmarks beside CVDP (VerilogEval, RTLLM): list, fetch, path.", no_args_is_help=True)
app.add_typer(benchmarks_app, name="benchmarks")
agents_app = typer.Typer(help="Command-line coding agents for `eval --agent`: list, install, check.", invoke_without_command=True)
app.add_typer(agents_app, name="agents")
quality_app = typer.Typer(help="Design quality: standard-cell libraries (list, fetch) and one design measured (measure).", no_args_is_help=True)
app.add_typer(quality_app, name="quality")
export_app = typer.Typer(help="Write problems in another tool's format: Harbor task folders, veRL's Parquet rows, NeMo-Gym's JSONL rows.", no_args_is_help=True)
app.add_typer(export_app, name="export")

app.command("doctor")(doctor)
toolchain_app.command("install")(toolchain_install)
toolchain_app.command("pack")(toolchain_pack)
toolchain_app.command("path")(toolchain_path)
toolchain_app.command("docker-image")(toolchain_docker_image)
app.command("check")(check_command)
app.command("audit")(audit_command)
app.command("export-bundled")(export_bundled)
export_app.command("harbor")(export_harbor)
export_app.command("verl")(export_verl)
export_app.command("nemo-gym")(export_nemo_gym)
app.command("eval")(eval_command)
quality_app.command("list")(quality_list)
quality_app.command("fetch")(quality_fetch)
quality_app.command("measure")(quality_measure)
app.command("compare")(compare_command)
app.command("rescore")(rescore_command)
app.command("coverage")(coverage_command)
app.command("decontaminate")(decontaminate_command)
app.command("parity")(parity_command)
app.command("debug")(debug_command)
app.command("report")(report_command)
app.command("serve")(serve_command)
benchmarks_app.command("list")(benchmarks_list)
benchmarks_app.command("fetch")(benchmarks_fetch)
benchmarks_app.command("path")(benchmarks_path)
agents_app.callback()(agents_main)
agents_app.command("list")(agents_list)
agents_app.command("install")(agents_install)
agents_app.command("check")(agents_check)
