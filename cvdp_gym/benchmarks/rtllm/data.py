"""RTLLM (hkust-zhiyao/RTLLM): v2.0 (``main``, 50 designs) and v1.1 (branch ``v1.1``, 29).

Layout of a copy: one folder per design (v2.0 nests them by category:
``Arithmetic/Adder/adder_8bit/``; v1.1 has them at the top), each with
``design_description.txt`` (the whole prompt: it ends "Give me the complete code."),
``testbench.v``, ``verified_<name>.v`` (the reference) and a ``makefile``; a few designs
have data files their test benches read (``reference.dat``, ``*.txt``).

The design's name is its folder's (``auto_run.py`` compiles ``<design>.v``), and an answer is
that file; its module is the one the test bench instantiates (``extra["module"]``). Most
references keep a ``verified_`` prefix on their module's name, which no test bench
instantiates: the reference answer has that header renamed (as TuRTLe's copy has it). The
official flow needs Synopsys VCS; here it runs on Icarus 13 (the root's, ``cvdp-sim``) as
the open flows do (:mod:`cvdp_gym.benchmarks.rtllm.flow`). ``?rule=open``
makes the environments' verdict use the open flows' pass rule ("Passed" and no "ERROR")
instead of ``auto_run.py``'s ("pass" anywhere in the output).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from cvdp_gym.data.benchmark import Benchmark, Pin, agentic_variant, flag
from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import DatasetError

DESCRIPTION, TESTBENCH, MAKEFILE = "design_description.txt", "testbench.v", "makefile"
#: The pass rules: ``auto_run.py``'s ("Pass" or "pass" in the output) and the open flows'.
RULE_AUTO_RUN, RULE_OPEN = "auto_run", "open"
_TEST_DESIGN = re.compile(r"^\s*TEST_DESIGN\s*=\s*(\S+)", re.M)
#: ``NAME [#(...)] instance (``: a module instantiation in a test bench.
_INSTANCE = re.compile(r"(?m)^\s*([A-Za-z_]\w*)(?:\s*#\s*\((?:[^()]|\([^()]*\))*\)\s*|\s+)([A-Za-z_]\w*)\s*\(")
_MODULE = re.compile(r"\bmodule\s+([A-Za-z_]\w*)")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_KEYWORDS = frozenset(
    [
        "module",
        "input",
        "output",
        "inout",
        "wire",
        "reg",
        "logic",
        "integer",
        "real",
        "time",
        "realtime",
        "bit",
        "byte",
        "int",
        "shortint",
        "longint",
        "initial",
        "always",
        "always_ff",
        "always_comb",
        "always_latch",
        "assign",
        "if",
        "else",
        "for",
        "while",
        "repeat",
        "forever",
        "case",
        "casez",
        "casex",
        "begin",
        "end",
        "fork",
        "join",
        "function",
        "task",
        "parameter",
        "localparam",
        "genvar",
        "generate",
        "endgenerate",
        "wait",
        "return",
        "disable",
        "default",
        "typedef",
        "struct",
        "enum",
        "string",
        "event",
    ]
)
#: Files of a design folder that are not data its test bench reads.
_NOT_DATA = (DESCRIPTION, TESTBENCH, MAKEFILE)


def design_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` holding a design (a description and a test bench)."""
    return sorted(
        (p.parent for p in root.rglob(DESCRIPTION) if (p.parent / TESTBENCH).is_file() and ".git" not in p.parts),
        key=lambda p: p.relative_to(root).as_posix(),
    )


def instantiated_module(testbench: str) -> str | None:
    """The module a test bench instantiates that it does not define (the design's)."""
    text = _COMMENTS.sub("", testbench)
    defined = set(_MODULE.findall(text))
    for match in _INSTANCE.finditer(text):
        name = match.group(1)
        if name not in _KEYWORDS and name not in defined and match.group(2) not in _KEYWORDS:
            return name
    return None


def as_design(reference: str, module: str | None) -> str:
    """The reference as an answer: its ``module verified_...`` header renamed to the module
    the test bench instantiates (many references keep the ``verified_`` prefix; the test
    benches never do). Only that header changes."""
    if module is None or module in _MODULE.findall(_COMMENTS.sub("", reference)):
        return reference
    match = re.search(r"\bmodule\s+(verified_\w*)", reference)
    return reference[: match.start(1)] + module + reference[match.end(1) :] if match else reference


def reference_file(folder: Path) -> Path | None:
    """The design's ``verified_*.v`` (its name need not match the design's)."""
    found = sorted(folder.glob("verified_*.v"))
    return found[0] if found else None


class _Rtllm(Benchmark):
    grader = "rtllm"
    toolchain = "cvdp-sim"
    env_var = "CVDP_GYM_RTLLM"
    option_defaults: ClassVar[dict[str, str]] = {"rule": RULE_AUTO_RUN, "agentic": "0"}
    tasks = ()

    def holds(self, path: Path) -> bool:
        return path.is_dir() and bool(design_folders(path))

    #: Whether a copy's design folders sit in category folders (v2.0) or at its root (v1.1).
    nested: ClassVar[bool]

    def find(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        """A copy (or one design folder) whose folders are laid out as this version's."""
        folders = design_folders(path) if path.is_dir() else []
        if not folders:
            return None
        nested = any(len(f.relative_to(path).parts) > 1 for f in folders)
        return (path, ()) if nested == self.nested else None

    def files(self, root: Path) -> list[Path]:
        return [p for folder in design_folders(root) for p in sorted(folder.iterdir()) if p.is_file()]

    def load(self, root: Path, tasks: tuple[str, ...], options: Mapping[str, str]) -> list[Problem]:
        self.check_tasks(tasks)
        rule = self.options(options)["rule"]
        if rule not in (RULE_AUTO_RUN, RULE_OPEN):
            raise DatasetError(f"{self.name}: option rule={rule!r}: expected {RULE_AUTO_RUN} or {RULE_OPEN}")
        problems = [self.problem(root, folder, rule) for folder in design_folders(root)]
        if flag(options, "agentic"):
            problems = [agentic_variant(p, p.prompt) for p in problems]
        return problems

    def problem(self, root: Path, folder: Path, rule: str) -> Problem:
        design = folder.name
        reference = reference_file(folder)

        def read(path: Path) -> str:
            try:
                return path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise DatasetError(f"{path}: cannot read: {exc}") from None

        data = {
            p.name: read(p)
            for p in sorted(folder.iterdir())
            if p.is_file() and p.name not in _NOT_DATA and not p.name.startswith("verified_")
        }
        testbench = read(folder / TESTBENCH)
        module = instantiated_module(testbench)
        makefile = folder / MAKEFILE
        declared = _TEST_DESIGN.search(read(makefile)) if makefile.is_file() else None
        family = folder.relative_to(root).parts[0] if len(folder.relative_to(root).parts) > 1 else ""
        target = f"{design}.v"
        return Problem(
            id=f"{self.name}.{design}",
            categories=(family,) if family else (),
            agentic=False,
            prompt=read(folder / DESCRIPTION),
            context={},
            targets=(target,),
            harness={TESTBENCH: testbench, **data},
            reference={target: as_design(read(reference), module)} if reference is not None else None,
            source=str(folder),
            benchmark=self.name,
            task="",
            grader=self.grader,
            toolchain=self.toolchain,
            defect=self.defects.get(design),
            extra={
                "name": design,
                "module": module,
                "rule": rule,
                "reference_file": reference.name if reference is not None else None,
                "test_design": declared.group(1) if declared else None,
                "data_files": sorted(data),
            },
        )


#: Found by ``cvdp-gym check`` on the pinned commits (Icarus 13): designs whose own reference
#: fails its own test bench outside VCS, or whose description disagrees with its test bench.
_NEEDS_VCS = "needs VCS: "
_SHARED_DEFECTS = {
    "radix2_div": _NEEDS_VCS + "the test bench applies each input exactly at a clock edge, a race VCS resolves "
    "one way and Icarus the other (its reference fails 3 of 8 vectors); the description also omits the res_ready port",
}
_V2_DEFECTS = {
    **_SHARED_DEFECTS,
    "ring_counter": _NEEDS_VCS + "the test bench initialises an array with {...}, which Icarus cannot elaborate, "
    "and its two always blocks race (RTLLM issue 19)",
    "clkgenerator": _NEEDS_VCS + "the test bench samples the clock at the instants the design toggles it, a race "
    "(RTLLM issue 19; its reference fails 20 checks under Icarus)",
    "freq_divbyeven": "the description names the module freq_diveven; the test bench instantiates freq_divbyeven",
    "LFSR": "the test bench connects the ports by position as (out, clk, rst); the description lists clk, rst, out",
    "sequence_detector": "the description names the reset reset_n; the test bench and reference use rst_n",
}
_V11_DEFECTS = {
    **_SHARED_DEFECTS,
    "div_16bit": "the test bench declares expected_result twice, which Icarus rejects (fixed in v2.0)",
    "pe": "the reference declares c twice, which Icarus rejects (fixed in v2.0)",
}


class RtllmV2(_Rtllm):
    name = "rtllm-v2"
    title = "RTLLM v2.0"
    nested = True
    defects: ClassVar[dict[str, str]] = _V2_DEFECTS
    pin = Pin(
        "https://github.com/hkust-zhiyao/RTLLM",
        "41b26896e33b536940116a975626455eed3de65e",
        "fc4ead568acd92f86cd1023f9981ea0e1b3c29d210e82589110386e53f831d7b",
        "main",
    )


class RtllmV11(_Rtllm):
    name = "rtllm-v1.1"
    title = "RTLLM v1.1"
    nested = False
    defects: ClassVar[dict[str, str]] = _V11_DEFECTS
    env_var = "CVDP_GYM_RTLLM_V1_1"
    pin = Pin(
        "https://github.com/hkust-zhiyao/RTLLM",
        "f6d03dee61fd80b868eddc3bf3e675424726a68f",
        "d34f46c1f92b0d1a1676ce9fd21c43353e85da481c5566050131b4dd4c50ba78",
        "v1.1",
    )


#: This plug-in's datasets (:mod:`cvdp_gym.plugins`).
BENCHMARKS = (RtllmV2(), RtllmV11())
