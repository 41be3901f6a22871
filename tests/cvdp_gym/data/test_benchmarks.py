"""Loading VerilogEval v1/v2 and RTLLM v1.1/v2.0 from made-up copies in their exact layouts.

The copies are under ``tests/fixtures/benchmarks`` (own problems, nothing upstream's). What a
load must give is read from those files here (``problems.txt``, the ``.jsonl`` records, the
design folders), never from what the loader produced on an earlier run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest

from cvdp_gym.benchmarks.verilog_eval_v2.data import VerilogEvalV2
from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmark import Pin
from cvdp_gym.data.benchmarks import BENCHMARKS, detect, sources
from cvdp_gym.errors import DatasetError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
VE2, VE1 = FIXTURES / "verilog-eval", FIXTURES / "verilog-eval-v1"
RTLLM2, RTLLM11 = FIXTURES / "rtllm", FIXTURES / "rtllm-v1.1"
SPEC, COMPLETE = "spec-to-rtl", "code-complete-iccad2023"
ENV_VARS = {b.env_var for b in BENCHMARKS.values()}


def ve2_names(task: str = SPEC) -> list[str]:
    """The problems of a task folder, as its ``problems.txt`` lists them."""
    return (VE2 / f"dataset_{task}" / "problems.txt").read_text().split()


def ve1_records(label: str) -> list[dict]:
    path = VE1 / "data" / f"VerilogEval_{label}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rtllm_designs(root: Path) -> dict[str, Path]:
    """Design name -> folder: every folder holding a description and a test bench."""
    return {p.parent.name: p.parent for p in root.rglob("design_description.txt") if (p.parent / "testbench.v").is_file()}


def ve2_ids(tasks=(SPEC, COMPLETE)) -> list[str]:
    return [f"verilog-eval-v2.{task}.{name}" for task in tasks for name in ve2_names(task)]


def ve1_ids(tasks=("human", "machine")) -> list[str]:
    labels = {"human": "Human", "machine": "Machine"}
    return [f"verilog-eval-v1.{task}.{r['task_id']}" for task in tasks for r in ve1_records(labels[task])]


def one_line(exc: pytest.ExceptionInfo) -> str:
    """The error's message, checked to be one line (what the CLI prints)."""
    message = str(exc.value)
    assert message and "\n" not in message, message
    return message


@pytest.fixture
def no_copies(monkeypatch, tmp_path):
    """No environment variable names a copy, and the user cache is an empty folder."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ---------------------------------------------------------------------------------------------
# Loading by spec, by path, by environment variable
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "folder", "ids"),
    [
        ("verilog-eval-v2", VE2, lambda: ve2_ids()),
        ("verilog-eval-v1", VE1, lambda: ve1_ids()),
        ("rtllm-v2", RTLLM2, lambda: sorted(f"rtllm-v2.{d}" for d in rtllm_designs(RTLLM2))),
        ("rtllm-v1.1", RTLLM11, lambda: sorted(f"rtllm-v1.1.{d}" for d in rtllm_designs(RTLLM11))),
    ],
)
def test_every_copy_loads_by_spec_and_folder(no_copies, spec, folder, ids):
    ds = load_dataset(spec, benchmark_dir=folder)
    got = [p.id for p in ds]
    assert (sorted(got) if spec.startswith("rtllm") else got) == ids()
    bench = BENCHMARKS[spec]
    for p in ds:
        assert (p.benchmark, p.grader, p.toolchain, p.flow) == (spec, bench.grader, bench.toolchain, bench.grader)
        assert p.scoring == "harness" and p.reference and p.harness and p.prompt and len(p.targets) == 1


@pytest.mark.parametrize(
    ("path", "name", "ids"),
    [
        (VE2, "verilog-eval-v2", lambda: ve2_ids()),
        (VE2 / f"dataset_{COMPLETE}", "verilog-eval-v2", lambda: ve2_ids((COMPLETE,))),
        (VE2 / f"dataset_{SPEC}", "verilog-eval-v2", lambda: ve2_ids((SPEC,))),
        (VE1, "verilog-eval-v1", lambda: ve1_ids()),
        (VE1 / "data" / "VerilogEval_Machine.jsonl", "verilog-eval-v1", lambda: ve1_ids(("machine",))),
        (VE1 / "data" / "VerilogEval_Human.jsonl", "verilog-eval-v1", lambda: ve1_ids(("human",))),
        (RTLLM2, "rtllm-v2", lambda: sorted(f"rtllm-v2.{d}" for d in rtllm_designs(RTLLM2))),
        (RTLLM11, "rtllm-v1.1", lambda: sorted(f"rtllm-v1.1.{d}" for d in rtllm_designs(RTLLM11))),
    ],
)
def test_a_path_is_recognised_by_its_layout(no_copies, path, name, ids):
    found = detect(path)
    assert found is not None and found[0].name == name
    got = [p.id for p in load_dataset(str(path))]
    assert (sorted(got) if name.startswith("rtllm") else got) == ids()


def test_a_folder_that_is_no_benchmark_is_not_detected(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here\n")
    assert detect(tmp_path) is None
    assert detect(tmp_path / "notes.txt") is None


@pytest.mark.parametrize(
    ("spec", "folder"),
    [("verilog-eval-v2", VE2), ("verilog-eval-v1", VE1), ("rtllm-v2", RTLLM2), ("rtllm-v1.1", RTLLM11)],
)
def test_the_environment_variable_names_a_copy(no_copies, monkeypatch, spec, folder):
    monkeypatch.setenv(BENCHMARKS[spec].env_var, str(folder))
    assert [p.id for p in load_dataset(spec)] == [p.id for p in load_dataset(spec, benchmark_dir=folder)]


def test_the_verilog_eval_variable_is_read(no_copies, monkeypatch):
    monkeypatch.setenv("CVDP_GYM_VERILOG_EVAL", str(VE2))
    assert [p.id for p in load_dataset("verilog-eval-v2:spec-to-rtl")] == ve2_ids((SPEC,))


def test_no_copy_anywhere_says_how_to_get_one(no_copies):
    with pytest.raises(DatasetError) as exc:
        load_dataset("verilog-eval-v2")
    message = one_line(exc)
    assert "cvdp-gym benchmarks fetch verilog-eval-v2" in message
    assert "CVDP_GYM_VERILOG_EVAL" in message and "--benchmark-dir" in message


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_a_benchmark_dir_without_the_benchmark_is_refused(no_copies, tmp_path, where):
    folder = tmp_path / where
    if where == "empty":
        folder.mkdir()
    with pytest.raises(DatasetError) as exc:
        load_dataset("rtllm-v2", benchmark_dir=folder)
    assert str(folder) in one_line(exc)


# ---------------------------------------------------------------------------------------------
# Filters, tasks and prompt options
# ---------------------------------------------------------------------------------------------


def test_ids_match_the_full_id_or_the_bare_name(no_copies):
    first, second = ve2_names()[:2]
    ds = load_dataset(f"verilog-eval-v2:{SPEC}", benchmark_dir=VE2, ids=[f"verilog-eval-v2.{SPEC}.{first}", second])
    assert [p.id for p in ds] == [f"verilog-eval-v2.{SPEC}.{first}", f"verilog-eval-v2.{SPEC}.{second}"]
    # A bare name matches the problem in every task.
    both = load_dataset("verilog-eval-v2", benchmark_dir=VE2, ids=[first])
    assert [p.id for p in both] == [f"verilog-eval-v2.{SPEC}.{first}", f"verilog-eval-v2.{COMPLETE}.{first}"]
    design = sorted(rtllm_designs(RTLLM2))[0]
    assert [p.id for p in load_dataset("rtllm-v2", benchmark_dir=RTLLM2, ids=[design])] == [f"rtllm-v2.{design}"]


def test_an_unknown_id_is_named(no_copies):
    with pytest.raises(DatasetError) as exc:
        load_dataset("verilog-eval-v2", benchmark_dir=VE2, ids=["Prob999_nothing"])
    assert "Prob999_nothing" in one_line(exc)


def test_tasks_are_chosen_by_spec_or_category(no_copies):
    assert [p.id for p in load_dataset(f"verilog-eval-v2:{COMPLETE}", benchmark_dir=VE2)] == ve2_ids((COMPLETE,))
    assert [p.id for p in load_dataset("verilog-eval-v1:machine", benchmark_dir=VE1)] == ve1_ids(("machine",))
    assert [p.id for p in load_dataset("verilog-eval-v2", benchmark_dir=VE2, categories=[SPEC])] == ve2_ids((SPEC,))
    both = load_dataset(f"verilog-eval-v2:{SPEC},{COMPLETE}", benchmark_dir=VE2)
    assert [p.id for p in both] == ve2_ids()


def test_one_shot_puts_the_example_file_first(no_copies):
    for task in (SPEC, COMPLETE):
        example = (VE2 / "scripts" / f"verilog-example-prefix_{task}_1-shot.txt").read_text()
        one = load_dataset(f"verilog-eval-v2:{task}?shots=1", benchmark_dir=VE2)
        zero = load_dataset(f"verilog-eval-v2:{task}?shots=0", benchmark_dir=VE2)
        for with_example, without in zip(one, zero, strict=True):
            assert with_example.prompt == example + without.prompt
            assert not without.prompt.startswith(example[:40])


def test_zero_shot_spec_to_rtl_is_question_then_answer(no_copies):
    for p in load_dataset(f"verilog-eval-v2:{SPEC}?shots=0", benchmark_dir=VE2):
        text = (VE2 / f"dataset_{SPEC}" / f"{p.extra['name']}_prompt.txt").read_text()
        assert p.prompt.startswith("\nQuestion:\n" + text.strip() + "\n")
        assert "[BEGIN] and [DONE]" in p.prompt and p.prompt.endswith("\nAnswer:\n")


def test_rules_add_the_rules_section(no_copies):
    plain = load_dataset(f"verilog-eval-v2:{SPEC}?shots=0&rules=0", benchmark_dir=VE2)
    ruled = load_dataset(f"verilog-eval-v2:{SPEC}?shots=0&rules=1", benchmark_dir=VE2)
    for without, with_rules in zip(plain, ruled, strict=True):
        assert "additional rules and coding conventions" not in without.prompt
        assert "additional rules and coding conventions" in with_rules.prompt
        assert "always @(*)" in with_rules.prompt
        # The rules sit after the problem and before the request for [BEGIN]/[DONE].
        assert with_rules.prompt.index("additional rules") < with_rules.prompt.index("Enclose your code")
        assert with_rules.prompt.endswith("\nAnswer:\n")


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ("verilog-eval-v2?colour=red", "colour"),
        ("verilog-eval-v2?shots=7", "shots"),
        ("verilog-eval-v2?shots=two", "shots"),
        ("verilog-eval-v2?rules=maybe", "rules"),
        ("verilog-eval-v2:synthesis", "synthesis"),
        ("verilog-eval-v1:robots", "robots"),
        ("rtllm-v2:adders", "adders"),
        ("rtllm-v2?rule=strict", "rule"),
    ],
)
def test_bad_options_and_tasks_are_one_line_errors(no_copies, spec, word):
    folder = {"verilog-eval-v2": VE2, "verilog-eval-v1": VE1, "rtllm-v2": RTLLM2}[spec.split("?")[0].split(":")[0]]
    with pytest.raises(DatasetError) as exc:
        load_dataset(spec, benchmark_dir=folder)
    assert word in one_line(exc)


# ---------------------------------------------------------------------------------------------
# What the problems hold
# ---------------------------------------------------------------------------------------------


def test_code_complete_prompt_comments_out_the_description_and_keeps_the_interface(no_copies):
    for p in load_dataset(f"verilog-eval-v2:{COMPLETE}?shots=0", benchmark_dir=VE2):
        folder = VE2 / f"dataset_{COMPLETE}"
        name = p.extra["name"]
        interface = (folder / f"{name}_ifc.txt").read_text()
        text = (folder / f"{name}_prompt.txt").read_text()
        description = text[: text.index("module TopModule")]
        assert p.extra["interface"] == interface
        before, _, after = p.prompt.partition("module TopModule")
        for line in description.splitlines():
            assert "// " + line in before.splitlines()
        assert all(line.startswith("//") for line in before.splitlines() if line.strip())
        assert ("module TopModule" + after).rstrip("\n") == interface.strip("\n")
        assert "Enclose your code" not in p.prompt


def test_verilog_eval_v2_problem_files(no_copies):
    for p in load_dataset("verilog-eval-v2", benchmark_dir=VE2):
        name, folder = p.extra["name"], VE2 / f"dataset_{p.task}"
        ref = (folder / f"{name}_ref.sv").read_text()
        assert p.targets == (f"{name}_sample01.sv",)
        assert p.harness == {f"{name}_test.sv": (folder / f"{name}_test.sv").read_text(), f"{name}_ref.sv": ref}
        assert p.reference == {p.targets[0]: ref.replace("RefModule", "TopModule")}


def test_verilog_eval_v1_problem_fields(no_copies):
    records = {r["task_id"]: r for r in ve1_records("Human")}
    described = {
        json.loads(line)["task_id"]: json.loads(line)["detail_description"]
        for line in (VE1 / "descriptions" / "VerilogDescription_Human.jsonl").read_text().splitlines()
    }
    for p in load_dataset("verilog-eval-v1:human", benchmark_dir=VE1):
        record = records[p.extra["name"]]
        assert p.extra["header"] == record["prompt"]
        assert p.reference == {f"{record['task_id']}_completion.sv": record["canonical_solution"]}
        assert record["test"] in p.harness.values() and record["prompt"] in p.harness.values()
        assert p.prompt.endswith(record["prompt"])
        for line in described[record["task_id"]].splitlines():
            assert "// " + line in p.prompt


def test_a_v1_jsonl_inside_a_clone_keeps_its_descriptions(no_copies):
    """Naming one ``.jsonl`` of a clone gives the same problems as naming the clone's task: the
    descriptions beside it (``descriptions/``) are the whole specification a model gets."""
    by_file = load_dataset(str(VE1 / "data" / "VerilogEval_Human.jsonl"))
    by_spec = load_dataset("verilog-eval-v1:human", benchmark_dir=VE1)
    assert [p.prompt for p in by_file] == [p.prompt for p in by_spec]


def test_rtllm_reference_header_is_renamed_to_the_test_benchs_module(no_copies):
    for spec, root in (("rtllm-v2", RTLLM2), ("rtllm-v1.1", RTLLM11)):
        designs = rtllm_designs(root)
        for p in load_dataset(spec, benchmark_dir=root):
            folder = designs[p.extra["name"]]
            name = folder.name
            verified = (folder / f"verified_{name}.v").read_text()
            testbench = (folder / "testbench.v").read_text()
            assert f"module verified_{name}" in verified and f"\n    {name} " in testbench
            assert p.extra["module"] == name and p.extra["reference_file"] == f"verified_{name}.v"
            assert p.targets == (f"{name}.v",)
            assert p.reference == {f"{name}.v": verified.replace(f"module verified_{name}", f"module {name}", 1)}
            assert p.prompt == (folder / "design_description.txt").read_text()
            assert p.prompt.rstrip().endswith("Give me the complete code.")
            data = sorted(f.name for f in folder.iterdir() if f.suffix not in (".v", ".txt") and f.name != "makefile")
            assert p.extra["data_files"] == data
            assert p.harness == {"testbench.v": testbench, **{d: (folder / d).read_text() for d in data}}
            assert p.extra["test_design"] == name


def test_an_rtllm_design_reads_its_data_file(no_copies):
    with_data = [p for p in load_dataset("rtllm-v2", benchmark_dir=RTLLM2) if p.extra["data_files"]]
    assert with_data, "the fixture copy must hold a design whose test bench reads a data file"
    for p in with_data:
        for name in p.extra["data_files"]:
            assert f'"{name}"' in p.harness["testbench.v"]


def test_the_rule_option_reaches_rtllm_problems(no_copies):
    assert {p.extra["rule"] for p in load_dataset("rtllm-v2", benchmark_dir=RTLLM2)} == {"auto_run"}
    assert {p.extra["rule"] for p in load_dataset("rtllm-v2?rule=open", benchmark_dir=RTLLM2)} == {"open"}


def test_defects_apply_to_one_task_or_both(no_copies):
    first, *_, last = ve2_names()

    class Flagged(VerilogEvalV2):
        defects: ClassVar[dict[str, str]] = {last: "both tasks' defect", f"{SPEC}.{first}": "spec-to-rtl's defect"}

    bench = Flagged()
    problems = {p.id: p for p in bench.load(VE2, (), bench.options({}))}
    for task in (SPEC, COMPLETE):
        assert problems[f"verilog-eval-v2.{task}.{last}"].defect == "both tasks' defect"
    assert problems[f"verilog-eval-v2.{SPEC}.{first}"].defect == "spec-to-rtl's defect"
    assert problems[f"verilog-eval-v2.{COMPLETE}.{first}"].defect is None


# ---------------------------------------------------------------------------------------------
# Fetching a pinned commit into the user cache
# ---------------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=cvdp tests", "-c", "user.email=tests@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def upstream(tmp_path) -> tuple[Path, str]:
    """A local git repository holding the VerilogEval v2 copy, committed: (its folder, the commit)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "upstream"
    shutil.copytree(VE2, repo)
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "made-up copy", cwd=repo)
    return repo, _git("rev-parse", "HEAD", cwd=repo)


def pinned(url: str, commit: str, checksum: str) -> VerilogEvalV2:
    """VerilogEval v2 pinned to another commit (a subclass: the plug-in's own code, another pin)."""

    class Pinned(VerilogEvalV2):
        pin = Pin(url, commit, checksum, "main")

    return Pinned()


def test_fetch_verifies_and_keeps_the_pinned_commit(no_copies, upstream):
    repo, commit = upstream
    bench = pinned(repo.as_uri(), commit, sources.checksum(VerilogEvalV2(), VE2))
    said: list[str] = []
    path = sources.fetch(bench, log=said.append)
    assert path == sources.cache_path(bench) and path.is_relative_to(no_copies)
    assert (path / sources.VERIFIED).read_text().strip() == bench.pin.checksum
    assert not (path / ".git").exists()
    assert sources.checksum(bench, path) == bench.pin.checksum
    assert len(said) == 1 and commit[:12] in said[0]
    assert sources.locate(bench) == path
    loaded = [p.id for p in bench.load(path, (), bench.options({}))]
    assert loaded == ve2_ids()
    # A second fetch uses the verified copy; the repository is not asked again.
    shutil.rmtree(repo)
    assert sources.fetch(bench, log=said.append) == path


def test_fetch_refuses_a_copy_with_the_wrong_checksum(no_copies, upstream):
    repo, commit = upstream
    bench = pinned(repo.as_uri(), commit, "0" * 64)
    with pytest.raises(DatasetError) as exc:
        sources.fetch(bench, log=lambda _: None)
    assert "checksum" in one_line(exc)
    assert not sources.cache_path(bench).exists()
    assert list(sources.cache_path(bench).parent.iterdir()) == []
    with pytest.raises(DatasetError):
        sources.locate(bench)


def test_fetch_from_an_unreachable_place_is_a_one_line_error(no_copies, tmp_path):
    gone = (tmp_path / "no-such-repository").as_uri()
    bench = pinned(gone, "1" * 40, "0" * 64)
    with pytest.raises(DatasetError) as exc:
        sources.fetch(bench, log=lambda _: None)
    message = one_line(exc)
    assert "could not fetch" in message and bench.env_var in message
    assert not sources.cache_path(bench).exists()
