"""The documentation keeps working: the site builds, its examples run, its commands parse.

What is checked, over README.md and every page under docs/:

- the site builds with ``mkdocs build --strict`` (mkdocs.yml's ``validation:`` makes a
  broken internal link or anchor a warning, and ``--strict`` a failure), and a page with a
  broken link and a broken anchor does fail it;
- every ```python block runs, for real, against the bundled problems and the real sandbox,
  each in a fresh folder holding the fixtures below and with a fresh grade cache. A block
  that needs what is not here (a model endpoint, a Tinker key, a GPU) is preceded by
  ``<!-- docs: no-run (the reason) -->``: it is compiled, not run, and reported skipped with
  that reason (``pytest -rs`` lists them);
- every ``cvdp-gym ...``, ``rtl-train ...`` and ``.venv/bin/...`` invocation in a ```bash
  block or an inline code span parses with the real command line (click's own parser, not
  run): the command exists and takes every option given, so a renamed or removed option
  fails with the file and line; ``bash scripts/X.sh`` and ``.venv/bin/python scripts/X.py``
  name scripts that exist and options those scripts mention;
- README.md's relative links point to files and headings that exist, and
  docs/training.md's TrainConfig table names every field.

Fixtures (docs/getting-started.md, "Running the examples", tells readers the same):
``mine.sv`` is the bundled gray_converter problem's reference solution and ``pwm_gen.sv``
the agentic pwm_gen problem's; the benchmarks' variables (``CVDP_GYM_VERILOG_EVAL``...) name
the made-up copies in tests/fixtures/benchmarks.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
import typer

try:  # Typer 0.2x carries its own copy of click (its commands are not click's classes)
    from typer import _click as click
except ImportError:  # older Typer runs on click itself
    import click

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The marker that keeps the next code block from running: ``<!-- docs: no-run (reason) -->``.
NO_RUN = re.compile(r"<!--\s*docs:\s*no-run\s*\((?P<reason>[^)]*)\)\s*-->")
#: Files the examples read, written into each example's folder: name -> (problem, file).
FIXTURES = {
    "mine.sv": ("cvdp_gym_gray_converter_0001", "rtl/gray_converter.sv"),
    "pwm_gen.sv": ("cvdp_gym_agentic_pwm_gen_0001", "rtl/pwm_gen.sv"),
}
#: The benchmarks' variables, pointed at the made-up copies in tests/fixtures/benchmarks, so an
#: example can name ``verilog-eval-v2`` as a reader with a real copy would.
BENCHMARK_COPIES = {
    "CVDP_GYM_VERILOG_EVAL": "verilog-eval", "CVDP_GYM_VERILOG_EVAL_V1": "verilog-eval-v1",
    "CVDP_GYM_RTLLM": "rtllm", "CVDP_GYM_RTLLM_V1_1": "rtllm-v1.1",
}
#: Programs of .venv/bin that are not this project's console scripts (their options are not checked).
OTHER_TOOLS = {"python", "pip", "ruff", "pytest", "mkdocs", "vf-eval"}
_SEPARATORS = {"&&", "||", ";", "|", "&"}
_INLINE_COMMAND = re.compile(r"`((?:\.venv/bin/)?(?:cvdp-gym|rtl-train) [^`]+)`")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, the line of its first code line, its text."""

    page: Path
    line: int
    lang: str
    text: str
    no_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def code_blocks(page: Path) -> list[Block]:
    """The page's fenced blocks (fences at the start of a line), with the no-run marker."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(`{3,})(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = NO_RUN.search(before)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1))), None)
        assert end is not None, f"{page.relative_to(ROOT)}:{i + 1}: unclosed code block"
        blocks.append(Block(page, i + 2, fence.group(2), "\n".join(lines[i + 1 : end]) + "\n",
                            marker.group("reason") if marker else None))
        i = end + 1
    return blocks


def _prose(page: Path) -> Iterator[tuple[int, str]]:
    """The page's lines outside fenced blocks, numbered from 1."""
    inside = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^(`{3,})", line)
        if fence and inside is None:
            inside = fence.group(1)
        elif fence and inside is not None and line.startswith(inside):
            inside = None
        elif inside is None:
            yield number, line


PYTHON_BLOCKS = [b for page in PAGES for b in code_blocks(page) if b.lang == "python"]


# -- the site --------------------------------------------------------------------------


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of `config` into `site` (skipped where MkDocs is missing, but not in CI)."""
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI must build the docs: pip install -e '.[docs]'")
        pytest.skip("mkdocs is missing: pip install -e '.[docs]'")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_site_builds_strictly(tmp_path):
    built = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    """The validation settings really catch what they are there for."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with open(tmp_path / "docs" / "index.md", "a", encoding="utf-8") as page:
        page.write("\n[gone](no-such-page.md) and [nowhere](grading.md#no-such-heading)\n")
    built = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = built.stdout + built.stderr
    assert built.returncode != 0
    assert "no-such-page.md" in output and "no-such-heading" in output, output


# -- the Python examples ---------------------------------------------------------------


@pytest.fixture(scope="session")
def grade_cache_home(tmp_path_factory) -> Path:
    """One empty grade cache for the whole session: each answer is simulated once."""
    return tmp_path_factory.mktemp("docs-cache")


@pytest.mark.sandbox
@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_python_example_runs(block, toolchain, grade_cache_home, tmp_path, monkeypatch):
    code = compile("\n" * (block.line - 1) + block.text, str(block.page), "exec")
    if block.no_run is not None:
        pytest.skip(f"{block.where}: not run ({block.no_run})")
    from cvdp_gym.data import load_dataset

    bundled = load_dataset("bundled")
    for name, (problem_id, path) in FIXTURES.items():
        (tmp_path / name).write_text(bundled[problem_id].reference[path], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(grade_cache_home))
    for variable, copy in BENCHMARK_COPIES.items():  # the made-up copies stand in for the real ones
        monkeypatch.setenv(variable, str(ROOT / "tests" / "fixtures" / "benchmarks" / copy))
    exec(code, {"__name__": "__main__"})


def test_every_no_run_marker_names_a_reason_and_precedes_a_python_block():
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in _prose(page):
            if "docs: no-run" not in line:
                continue
            where = f"{page.relative_to(ROOT)}:{number}"
            assert NO_RUN.search(line), f"{where}: write <!-- docs: no-run (the reason) -->"
            after = next((text for text in lines[number:] if text.strip()), "")
            assert after.startswith("```python"), f"{where}: a no-run marker goes just before a ```python block"


# -- the commands ----------------------------------------------------------------------


def _entry_points() -> dict[str, click.Command]:
    """Each console script of pyproject.toml's [project.scripts], as a click command."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[project\.scripts\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    assert section, "pyproject.toml has no [project.scripts]"
    commands = {}
    for program, target in re.findall(r'^([\w-]+)\s*=\s*"([^"]+)"', section.group(1), re.M):
        module, _, attribute = target.partition(":")
        commands[program] = typer.main.get_command(getattr(import_module(module), attribute))
    return commands


def invocations(page: Path) -> Iterator[tuple[int, list[str]]]:
    """(line, argv) of every command in the page's bash blocks and inline code spans."""
    for block in code_blocks(page):
        if block.lang not in ("bash", "sh", "console"):
            continue
        lines = block.text.splitlines()
        i = 0
        while i < len(lines):
            start, text = block.line + i, lines[i]
            while text.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text.rstrip()[:-1] + " " + lines[i]
            i += 1
            yield from ((start, argv) for argv in _commands(text))
    for number, line in _prose(page):
        for match in _INLINE_COMMAND.finditer(line):
            yield from ((number, argv) for argv in _commands(match.group(1)))


def _commands(text: str) -> Iterator[list[str]]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    argv: list[str] = []
    for token in [*lexer, ";"]:
        if token in _SEPARATORS:
            while argv and _ASSIGNMENT.match(argv[0]):
                argv.pop(0)
            if argv:
                yield argv
            argv = []
        else:
            argv.append(token)


def _check_cli(root: click.Command, program: str, args: list[str]) -> str | None:
    """Why ``program args`` would not parse, or None. Nothing is run."""
    command, path, words, parent = root, [program], list(args), None
    while hasattr(command, "list_commands"):  # a group: resolve its subcommand
        parent = click.Context(command, info_name=path[-1], parent=parent, resilient_parsing=True)
        known = ", ".join(command.list_commands(parent))
        if not words or words[0].startswith("-"):
            return f"{' '.join(path)}: a command is needed ({known})"
        sub = command.get_command(parent, words[0])
        if sub is None:
            return f"{' '.join(path)} has no command {words[0]!r} ({known})"
        command, words = sub, words[1:]
        path.append(sub.name or "")
    name = " ".join(path)
    # Unknown options first: a resilient parse stops at the first one without a word.
    accepted = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    for word in words:
        if word == "--":
            break
        if re.match(r"^--?[A-Za-z]", word) and word.split("=", 1)[0] not in accepted:
            return f"{name}: no such option {word}"
    try:  # resilient: placeholders (...) and missing arguments are fine here
        ctx = command.make_context(path[-1], list(words), parent=parent, resilient_parsing=True)
    except click.ClickException as exc:
        return f"{name}: {exc.format_message()}"
    for param in command.params:
        given = ctx.get_parameter_source(param.name) == click.core.ParameterSource.COMMANDLINE
        if given and ctx.params.get(param.name) is None:
            return f"{name}: {'/'.join(param.opts)} got a value it cannot take"
    if program == "rtl-train":
        from rtl_trainer.config import TrainConfig

        fields = {f.name for f in dataclasses.fields(TrainConfig)}
        set_option = next((p for p in command.params if "--set" in p.opts), None)
        for value in (ctx.params.get(set_option.name) if set_option else None) or ():
            key = value.partition("=")[0]
            if key not in fields:
                return f"{name}: --set {key}: not a TrainConfig field"
    return None


def _check_script(argv: list[str]) -> str | None:
    script = ROOT / argv[0]
    if not script.is_file():
        return f"no script {argv[0]}"
    source = script.read_text(encoding="utf-8")
    for word in argv[1:]:
        option = word.split("=", 1)[0]
        if option.startswith("-") and option not in source:
            return f"{argv[0]} does not take {option}"
    return None


def _problem(argv: list[str], programs: dict[str, click.Command]) -> str | None:
    head = argv[0]
    program = head.removeprefix(".venv/bin/")
    if program in programs:
        return _check_cli(programs[program], program, argv[1:])
    if head.startswith(".venv/bin/"):
        if program not in OTHER_TOOLS:
            return f"{head}: neither a console script of this project nor one of {sorted(OTHER_TOOLS)}"
        if program == "python" and len(argv) > 1 and argv[1].endswith(".py"):
            return _check_script(argv[1:])
    if head == "bash" and len(argv) > 1 and argv[1].startswith("scripts/"):
        return _check_script(argv[1:])
    return None


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_commands_parse(page):
    programs = _entry_points()
    problems = []
    for line, argv in invocations(page):
        problem = _problem(argv, programs)
        if problem:
            problems.append(f"{page.relative_to(ROOT)}:{line}: {problem}\n    {shlex.join(argv)}")
    assert not problems, "commands that would not parse:\n" + "\n".join(problems)


def test_the_command_check_catches_a_bad_option():
    programs = _entry_points()
    assert _problem(["cvdp-gym", "check", "bundled", "--jobs", "2"], programs) is None
    assert "--no-such" in _problem(["cvdp-gym", "check", "--no-such"], programs)
    assert "no command" in _problem([".venv/bin/cvdp-gym", "chek"], programs)
    assert "cannot take" in _problem(["rtl-train", "rl", "--steps", "many"], programs)


# -- links and tables ------------------------------------------------------------------


def _anchors(page: Path) -> set[str]:
    """The heading anchors of a page, made as MkDocs' toc extension makes them."""
    anchors = set()
    for _, line in _prose(page):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if heading:
            text = re.sub(r"[^\w\s-]", "", heading.group(1)).strip().lower()
            anchors.add(re.sub(r"[-\s]+", "-", text))
    return anchors


def test_readme_links_point_to_files_and_headings():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", text):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in _anchors(ROOT / target), f"README.md links to {target}#{anchor}: no such heading"


def test_training_page_lists_every_config_field():
    from rtl_trainer.config import TrainConfig

    page = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(TrainConfig) if f"`{f.name}`" not in page]
    assert not missing, f"docs/training.md does not describe TrainConfig fields {missing}"
