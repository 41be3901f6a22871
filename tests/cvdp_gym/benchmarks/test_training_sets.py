"""Training sets as datasets: the generic JSONL/Parquet form and the CodeV-R1, VeriThoughts and
RTLCoder layouts (made-up items in ``tests/fixtures/training``), their options, their bad
input (a pickle that is not plain data above all), and where their files come from (a path,
an environment variable, the Hugging Face cache offline)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvdp_gym.benchmarks.training.plain_pickle import plain_loads
from cvdp_gym.benchmarks.training.training_set import SYSTEM_MESSAGE, top_module, training_sets
from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmarks import BENCHMARKS, detect, fetch, locate
from cvdp_gym.data.bundle import export_jsonl
from cvdp_gym.data.problems import REFERENCE_GRADER
from cvdp_gym.errors import DatasetError, MissingDependencyError
from cvdp_gym.eval.published import known_tasks

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "training"
GENERIC, VERITHOUGHTS = FIXTURES / "generic.jsonl", FIXTURES / "verithoughts.jsonl"
RESYN = FIXTURES / "resyn_sample.json"
CODEV_ROWS = FIXTURES / "codev_r1_rows.json"
CODEV_HUB = "zhuyaoyu/CodeV-R1-dataset"
#: The top module of each generic item, as the fixture was written (pick2 is pick4's part).
GENERIC_TOPS = {"maj3": "maj3", "step_counter": "step_counter", "pick4": "pick4", "7": "byte_compare"}
PORT_FIELDS = ("input_port_width", "output_port_width", "clock_port_polarity", "reset_port_polarity_sync")


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def one_line(exc: pytest.ExceptionInfo, path: Path | None = None) -> str:
    """The error's message, checked to be one line (naming ``path`` first, when given)."""
    message = str(exc.value)
    assert message and "\n" not in message, message
    assert path is None or message.startswith(str(path)), message
    return message


@pytest.fixture(autouse=True)
def no_sources(monkeypatch):
    """No environment variable names a training set's files."""
    assert len(BENCHMARKS) > 4  # the catalog reads the plug-ins, which makes the training sets
    for bench in training_sets():
        monkeypatch.delenv(bench.env_var, raising=False)


def codev_truth(row: dict) -> dict:
    """A fixture row's ground truth as CodeV-R1 pickles it: port facts as sets of tuples."""
    variants = row["reward_model"]["ground_truth"]
    def pickled(field: str, value):
        return {tuple(x) for x in value} if field in PORT_FIELDS else value

    return {key: {k: pickled(k, v) for k, v in variant.items()} for key, variant in variants.items()}


def codev_parquet(path: Path, truths: list | None = None) -> Path:
    """The CodeV-R1 fixture rows as the RL Parquet holds them (ground truth pickled), or with ``truths``."""
    rows = json.loads(CODEV_ROWS.read_text())
    for number, row in enumerate(rows):
        truth = pickle.dumps(codev_truth(row)) if truths is None else truths[number]
        row["reward_model"] = {**row["reward_model"], "ground_truth": truth}
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# ---------------------------------------------------------------------------------------------
# The generic form
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["path", "spec option", "benchmark_dir", "environment variable"])
def test_the_generic_form_loads_by_path_spec_folder_and_variable(monkeypatch, how):
    if how == "path":
        assert detect(GENERIC)[0].name == "reference-set"
        ds = load_dataset(str(GENERIC))
    elif how == "spec option":
        ds = load_dataset(f"reference-set?path={GENERIC}")
    elif how == "benchmark_dir":
        ds = load_dataset("reference-set", benchmark_dir=GENERIC)
    else:
        monkeypatch.setenv(BENCHMARKS["reference-set"].env_var, str(GENERIC))
        ds = load_dataset("reference-set")
    assert [p.id for p in ds] == [f"reference-set.{r['id']}" for r in rows_of(GENERIC)]


def test_a_generic_item_is_a_problem_graded_by_its_reference():
    rows = {str(r["id"]): r for r in rows_of(GENERIC)}
    for problem in load_dataset(str(GENERIC)):
        name = problem.extra["name"]
        row, top = rows[name], GENERIC_TOPS[name]
        assert (problem.benchmark, problem.grader, problem.flow, problem.toolchain, problem.task) == (
            "reference-set", "reference", "reference", "cvdp-sim", "",
        )
        assert problem.targets == (f"{top}.sv",) and problem.reference == {f"{top}.sv": row["reference"]}
        assert problem.harness == {} and problem.context == {} and not problem.agentic and problem.has_harness
        assert problem.system_message == SYSTEM_MESSAGE
        spec = row.get("spec") or row.get("prompt") or row.get("description")
        assert problem.prompt.startswith(spec)
        assert problem.extra["top"] == top and problem.extra["set"] == "reference-set"
        assert problem.extra["checked_reference"] is True and problem.extra["equivalence"] == {}
        assert problem.extra.get("interface") == row.get("interface")
        assert problem.extra.get("metadata") == row.get("metadata")
        assert problem.categories == ((row["category"],) if "category" in row else ())
        if "interface" in row:  # not in the specification: appended, so the ports are known
            assert row["interface"] in problem.prompt and problem.prompt != spec
        json.dumps(problem.extra)  # plain JSON data
        problem.metadata()


def test_a_generic_parquet_gives_the_same_problems_as_its_jsonl(tmp_path):
    rows = [{**r, "id": str(r["id"])} for r in rows_of(GENERIC)]
    columns = sorted({key for row in rows for key in row})  # absent fields: null cells
    rows = [{key: row.get(key) for key in columns} for row in rows]
    path = tmp_path / "items.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert detect(path)[0].name == "reference-set"

    def facts(ds):
        return [(p.id, p.prompt, p.targets, p.reference, p.categories, {k: v for k, v in p.extra.items()}) for p in ds]

    assert facts(load_dataset(str(path))) == facts(load_dataset(str(GENERIC)))


def test_the_top_is_the_module_nobody_instantiates():
    parts = "module leaf(input a, output y); assign y = a; endmodule\n"
    assert top_module(parts + "module root(input a, output y); leaf u (.a(a), .y(y)); endmodule") == "root"
    assert top_module("module root(input a, output y); leaf #(.W(2)) u (a, y); endmodule\n" + parts) == "root"
    assert top_module("// module commented_out(\n" + parts) == "leaf"
    two = parts + "module other(input b, output z); assign z = b; endmodule\n"
    assert top_module(two) == "other"  # several: the last
    assert top_module("assign y = a;") is None


# ---------------------------------------------------------------------------------------------
# The published layouts
# ---------------------------------------------------------------------------------------------


def test_codev_r1_parquet_with_a_plain_data_pickle(tmp_path):
    path = codev_parquet(tmp_path / "codev_r1_rl_train.parquet")
    assert detect(path)[0].name == "codev-r1"
    rows = json.loads(CODEV_ROWS.read_text())
    by_spec = [load_dataset(str(path)), load_dataset("codev-r1", benchmark_dir=path)]
    for ds in by_spec:
        assert [p.id for p in ds] == [f"codev-r1.{r['extra_info']['index']}" for r in rows]
        for problem, row in zip(ds, rows, strict=True):
            messages = {m["role"]: m["content"] for m in row["prompt"]}
            answer = row["reward_model"]["ground_truth"]["answer"]
            assert problem.prompt == messages["user"] and problem.system_message == messages["system"]
            assert list(problem.reference.values()) == [answer["code"]]
            assert problem.grader == "reference" and problem.extra["checked_reference"] is True
            # The pickled sets come back as sorted lists: plain JSON data.
            assert problem.extra["codev_ports"] == {f: sorted(answer[f], key=repr) for f in PORT_FIELDS}
            json.dumps(problem.extra)


def test_codev_r1_ground_truth_as_json_text_reads_the_same(tmp_path):
    rows = json.loads(CODEV_ROWS.read_text())
    pickled = load_dataset(str(codev_parquet(tmp_path / "a.parquet")))
    texts = [json.dumps(r["reward_model"]["ground_truth"]) for r in rows]
    as_json = load_dataset(str(codev_parquet(tmp_path / "b.parquet", texts)))
    assert [(p.id, p.reference, p.extra) for p in as_json] == [(p.id, p.reference, p.extra) for p in pickled]


class _Boom:
    """Pickles as a call to ``os.system``: loading it with ``pickle.loads`` would run the command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", [2, 5])
def test_a_pickle_that_is_not_plain_data_is_refused_and_never_runs(tmp_path, protocol):
    marker = tmp_path / "ran"
    rows = json.loads(CODEV_ROWS.read_text())
    truths = [pickle.dumps(codev_truth(rows[0])), pickle.dumps({"answer": _Boom(marker)}, protocol=protocol)]
    path = codev_parquet(tmp_path / "evil.parquet", truths)
    with pytest.raises(DatasetError) as exc:
        load_dataset(str(path))
    message = one_line(exc, path)
    assert "row 2" in message and "system" in message and "not plain data" in message
    with pytest.warns(UserWarning, match="not plain data"):
        lenient = load_dataset(str(path), lenient=True)
    assert [p.id for p in lenient] == [f"codev-r1.{rows[0]['extra_info']['index']}"]
    assert len(lenient.skipped) == 1 and "not plain data" in lenient.skipped[0].reason
    assert not marker.exists()


def test_plain_loads_takes_plain_data_of_every_protocol_and_nothing_else():
    value = {"answer": {"code": "module m; endmodule", "ports": {("a", 1), ("b", 8)}, "n": 3.5, "f": frozenset({None})}}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert plain_loads(pickle.dumps(value, protocol=protocol), "here") == value
    assert plain_loads(pickle.dumps([b"\x00\xff"], protocol=3), "here") == [b"\x00\xff"]
    # Protocol 2 spells bytes as a call (_codecs.encode): refused like any other call.
    refused = (pickle.dumps(b"x", protocol=2), pickle.dumps(Path("x")), pickle.dumps(ValueError("x")))
    for bad in (*refused, b"\x80\x04truncated", b""):
        with pytest.raises(DatasetError) as exc:
            plain_loads(bad, "here")
        assert one_line(exc).startswith("here: ")


def test_verithoughts_rows():
    rows = rows_of(VERITHOUGHTS)
    assert detect(VERITHOUGHTS)[0].name == "verithoughts"
    ds = load_dataset(str(VERITHOUGHTS))
    assert [p.id for p in ds] == [f"verithoughts.{n}" for n in range(1, len(rows) + 1)]
    for problem, row in zip(ds, rows, strict=True):
        assert problem.prompt == row["question"] and list(problem.reference.values()) == [row["ground_truth"]]
        # verified: an independent answer was proved equal to the reference; false: nothing confirmed it.
        assert problem.extra["checked_reference"] is row["verified"] and problem.extra["verified"] is row["verified"]


def test_rtlcoder_rows_are_marked_unchecked():
    rows = rows_of(RESYN)
    assert detect(RESYN)[0].name == "rtlcoder"
    ds = load_dataset(str(RESYN))
    assert [p.id for p in ds] == [f"rtlcoder.{n}" for n in range(1, len(rows) + 1)]
    for problem, row in zip(ds, rows, strict=True):
        assert problem.prompt == row["Instruction"] and list(problem.reference.values()) == [row["Response"][-1]]
        assert problem.extra["checked_reference"] is False


def test_cvdp_and_verilog_eval_files_are_recognised_as_before(tmp_path):
    cvdp = tmp_path / "cvdp.jsonl"
    export_jsonl(cvdp)
    assert detect(cvdp) is None and detect(tmp_path) is None
    assert {p.benchmark for p in load_dataset(str(cvdp))} == {"cvdp"}
    v1 = REPO / "tests" / "fixtures" / "benchmarks" / "verilog-eval-v1" / "data" / "VerilogEval_Human.jsonl"
    assert detect(v1)[0].name == "verilog-eval-v1"


# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------


def test_equivalence_options_are_typed_and_stored():
    expected = {
        "mode": "formal", "cycles": 300, "depth": 12, "min_depth": 12, "x": "strict", "simulator": "verilator",
        "formal_timeout": 2.5, "seed": 0,
    }
    query = "&".join(f"{key}={value}" for key, value in expected.items())
    assert all(p.extra["equivalence"] == expected for p in load_dataset(f"reference-set?path={GENERIC}&{query}"))
    simulated = load_dataset(f"reference-set?path={GENERIC}&mode=simulation")
    assert all(p.extra["equivalence"] == {"mode": "simulation"} for p in simulated)


@pytest.mark.parametrize(
    ("option", "word"),
    [
        ("mode=fast", "mode"), ("cycles=0", "cycles"), ("cycles=many", "cycles"), ("depth=-1", "depth"),
        ("x=maybe", "x="), ("simulator=vcs", "simulator"), ("formal_timeout=0", "formal_timeout"),
        ("formal_timeout=nan", "formal_timeout"), ("formal_timeout=7200", "formal_timeout"),
        ("cycles=99999999", "cycles"),
        ("seed=-2", "seed"), ("colour=red", "colour"), ("agentic=maybe", "agentic"),
        ("depth=12", "min_depth=20 is deeper than depth=12"), ("min_depth=0", "min_depth"),
    ],
)
def test_a_bad_option_is_a_one_line_error(option, word):
    with pytest.raises(DatasetError) as exc:
        load_dataset(f"reference-set?path={GENERIC}&{option}")
    assert word in one_line(exc)


def test_the_agentic_option_poses_each_item_as_an_episode():
    for problem in load_dataset(f"reference-set?path={GENERIC}&agentic=1"):
        assert problem.agentic and problem.targets == (f"rtl/{problem.extra['top']}.sv",)
        assert list(problem.reference) == list(problem.targets) and "docs/specification.md" in problem.context


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

GOOD = {"id": "good", "spec": "An inverter.", "reference": "module inv(input a, output y); assign y = ~a; endmodule"}


@pytest.mark.parametrize(
    ("row", "word"),
    [
        ({"id": "r", "spec": "x", "reference": ""}, "no reference"),
        ({"id": "r", "spec": " ", "reference": GOOD["reference"]}, "no specification"),
        ({"id": "r", "spec": "x", "reference": "assign y = a;"}, "no module"),
        ({**GOOD, "id": "r", "top": "missing"}, "'missing' is not a module"),
        ({**GOOD, "id": None}, "no id"),
        ({**GOOD, "id": "two\nlines"}, "line break"),
        ({**GOOD, "id": "r", "metadata": [1]}, "metadata must be an object"),
        ({**GOOD, "id": "r", "checked_reference": "yes"}, "checked_reference"),
        ({**GOOD}, "repeats"),
        ([1, 2], "not a record"),
    ],
)
def test_a_bad_row_is_named_or_skipped_with_its_reason(tmp_path, row, word):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DatasetError) as exc:
        load_dataset(str(path))
    message = one_line(exc, path)
    assert message.startswith(f"{path}:2: ") and word in message
    with pytest.warns(UserWarning):
        lenient = load_dataset(str(path), lenient=True)
    assert [p.id for p in lenient] == ["reference-set.good"]
    assert len(lenient.skipped) == 1 and word in lenient.skipped[0].reason and lenient.skipped[0].source == f"{path}:2"


def test_a_row_of_another_layout_is_named(tmp_path):
    with pytest.raises(DatasetError) as exc:
        load_dataset(f"verithoughts?path={GENERIC}")
    assert one_line(exc, GENERIC).startswith(f"{GENERIC}:1: no specification (question)")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "no layout"])
def test_a_bad_parquet_file_is_a_one_line_error(tmp_path, damage):
    path = tmp_path / "items.parquet"
    if damage == "garbage":
        path.write_bytes(b"PAR1 this is not parquet at all")
    elif damage == "truncated":
        pq.write_table(pa.Table.from_pylist([{**GOOD, "id": str(n)} for n in range(50)]), path)
        path.write_bytes(path.read_bytes()[:-40])
    else:
        pq.write_table(pa.Table.from_pylist([{"question_text": "x", "answer": "y"}]), path)
    with pytest.raises(DatasetError) as exc:
        load_dataset(str(path))
    message = one_line(exc, path)
    expected = "no training-set layout" if damage == "no layout" else "not a readable Parquet file"
    assert expected in message


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "items.parquet"
    pq.write_table(pa.Table.from_pylist([GOOD]), path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingDependencyError) as exc:
        load_dataset(str(path))
    assert "cvdp-gym[parquet]" in one_line(exc, path)


# ---------------------------------------------------------------------------------------------
# Where the files come from
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hint"), [("codev-r1", f"?hf to download {CODEV_HUB}"), ("rtlcoder", "?hf=OWNER/NAME")],
)
def test_no_files_says_how_to_give_them(name, hint):
    with pytest.raises(DatasetError) as exc:
        load_dataset(name)
    message = one_line(exc)
    assert "--benchmark-dir" in message and BENCHMARKS[name].env_var in message and hint in message


def test_a_missing_path_is_named(tmp_path):
    with pytest.raises(DatasetError) as exc:
        load_dataset("reference-set", benchmark_dir=tmp_path / "nowhere.jsonl")
    assert str(tmp_path / "nowhere.jsonl") in one_line(exc)


def test_locate_and_fetch_send_training_sets_to_their_own_files():
    assert locate(BENCHMARKS["reference-set"], GENERIC) == GENERIC
    assert locate(BENCHMARKS["verithoughts"], FIXTURES) == FIXTURES  # a folder of several files
    with pytest.raises(DatasetError) as exc:
        fetch(BENCHMARKS["rtlcoder"], log=lambda _: None)
    assert "github.com/hkust-zhiyao/RTL-Coder" in one_line(exc)
    for bench in training_sets():
        assert bench.describe()["grader"] == "reference"


def test_the_host_reaches_training_sets_only_through_the_benchmark_methods(tmp_path):
    """What sets the training sets apart is what their ``Benchmark`` says, not their type: the
    pinned benchmarks keep the defaults, and ``eval``'s published figures never name a set."""
    pinned = BENCHMARKS["verilog-eval-v2"]
    assert (pinned.found_by_first_row, pinned.publishes_figures) == (False, True)
    assert pinned.own_copy(tmp_path) is None and pinned.fetch_own(print) is None
    names = {bench.name for bench in training_sets()}
    assert names == {"codev-r1", "verithoughts", "rtlcoder", "reference-set"}
    assert all(bench.found_by_first_row and not bench.publishes_figures for bench in training_sets())
    assert not names & set(known_tasks())
    problems, skipped = BENCHMARKS["reference-set"].load_problems(None, (), {"path": str(GENERIC)})
    assert [p.id for p in problems] == [p.id for p in load_dataset(f"reference-set?path={GENERIC}")] and skipped == []
    assert {p.grader for p in problems} == {REFERENCE_GRADER}


def hub_cache(home: Path, repo: str, files: dict[str, bytes]) -> None:
    """A Hugging Face cache holding ``files`` of the dataset ``repo`` at its ``main`` revision."""
    folder = home / "hub" / f"datasets--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(snapshot.name)
    for name, data in files.items():
        (snapshot / name).write_bytes(data)


def load_offline(spec: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``load_dataset(spec)`` in a fresh process whose Hugging Face cache is ``home``, offline."""
    code = (
        "import sys\nfrom cvdp_gym.data import load_dataset\nfrom cvdp_gym.errors import HubUnavailable\n"
        "try:\n    print([p.id for p in load_dataset(sys.argv[1])])\n"
        "except HubUnavailable as e:\n    print('UNAVAILABLE:', e)\n"
    )
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code, spec], env=env, capture_output=True, text=True, timeout=120)


def test_a_hugging_face_dataset_is_read_from_the_hub_cache(tmp_path):
    pytest.importorskip("huggingface_hub")
    rows = json.loads(CODEV_ROWS.read_text())
    parquet = codev_parquet(tmp_path / "x.parquet").read_bytes()
    hub_cache(tmp_path / "hf", CODEV_HUB, {"codev_r1_rl_train.parquet": parquet})
    hub_cache(tmp_path / "hf", "someone/items", {"items.jsonl": GENERIC.read_bytes()})
    done = load_offline("codev-r1?hf", tmp_path / "hf")
    assert done.stdout.strip() == repr([f"codev-r1.{r['extra_info']['index']}" for r in rows]), done.stderr
    done = load_offline("reference-set?hf=someone/items&file=items.jsonl", tmp_path / "hf")
    assert done.stdout.strip() == repr([f"reference-set.{r['id']}" for r in rows_of(GENERIC)]), done.stderr
    done = load_offline("codev-r1?hf", tmp_path / "empty")
    assert done.stdout.startswith("UNAVAILABLE:") and CODEV_HUB in done.stdout, done.stderr


# ---------------------------------------------------------------------------------------------
# Any row of a known layout: a Problem or a one-line error naming the file, never a crash
# ---------------------------------------------------------------------------------------------

_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
              st.sampled_from(["module m(input a, output y); assign y = a; endmodule", "", "m", "module"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
_LAYOUT_KEYS = {
    "generic": [
        "id", "spec", "prompt", "description", "reference", "top", "interface", "metadata", "checked_reference",
    ],
    "verithoughts": ["question", "ground_truth", "verified"],
    "rtlcoder": ["Instruction", "Response", "Input"],
    "codev": ["prompt", "reward_model", "extra_info"],
}
_rows = st.sampled_from(sorted(_LAYOUT_KEYS)).flatmap(
    lambda layout: st.fixed_dictionaries({}, optional={key: _values for key in _LAYOUT_KEYS[layout]})
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_rows, min_size=1, max_size=3))
def test_any_row_loads_or_is_a_one_line_error(tmp_path, rows):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        ds = load_dataset(str(path))
    except DatasetError as exc:
        message = str(exc)
        assert message.startswith(str(path)) and "\n" not in message, message
    else:
        for problem in ds:
            assert isinstance(problem.prompt, str) and problem.reference and json.dumps(problem.extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            load_dataset(str(path), lenient=True)
        except DatasetError as exc:  # only a file whose rows are no layout at all: then it is not a training set
            assert detect(path) is None, exc
