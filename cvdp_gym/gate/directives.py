"""Read an answer's compiler directives as every tool reads them, and keep it to one view.

Icarus, Verilator and Yosys each predefine macros of their own (``__ICARUS__``,
``VERILATOR``, ``SYNTHESIS``, ``FORMAL``...), and a harness may add some on its command line.
An answer that tests one of them compiles to one design in the simulator and another in the
synthesiser or the formal check: ``ifdef __ICARUS__ initial $finish;`` ends VerilogEval's
test bench at time 0, ``ifdef SYNTHESIS`` gives synthesis a one-gate body. Rather than list
what each tool defines (a list an optimiser outgrows), the answer may test only what it set
itself, so that its text reads the same under every tool by construction:

- a conditional (`` `ifdef ``, `` `ifndef ``, `` `elsif ``) tests a macro whose state the
  answer (or a file the problem supplies) set before it, in reading order, includes followed:
  every tool then takes the same branch. An include guard (`` `ifndef X `` followed at once by
  `` `define X ``) is allowed on a name no tool predefines (:data:`TOOL_MACROS`);
- a macro it uses (`` `NAME ``) is one it defined, or no tool's (:func:`tool_macro`): a
  tool's predefined value differs between tools (``SYNTHESIS + 0`` is 1 in Yosys, 0 where it
  is empty), while a macro only a harness or its test bench defines (ChipBench's shared
  ``WORD_SIZE``) is no tool's: a view without it does not build, which earns nothing. The
  compiler directives of the language (:data:`DIRECTIVES`) are the only others;
- an `` `include `` names, by a literal, a file of the answer or of the problem (a relative
  path, no ``..`` above the answer's folders; ``/code/...`` as the harness mounts it): the
  included text is read as part of the answer. Anything else is refused before any tool, or
  this gate's parser, opens it;
- comments that a tool reads as a pragma (``synopsys``/``synthesis``/``pragma`` comments:
  ``translate_off``, ``full_case``...) and attributes outside :data:`ATTRIBUTES` (Yosys's
  ``(* blackbox *)``, ``(* anyseq *)``, ``(* full_case *)``) change what one tool compiles and
  not another: refused.

Contract: ``read_directives(files, supplied=, readable=)`` walks the answer's files
(``{path: text}``) and returns :class:`Directives`: the findings and
every file the answer's includes reach (``included``: path as written, resolved path, text),
which the name check then parses with the rest. Cheap: one regular-expression pass a file.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cvdp_gym.data.verilog_text import top_level_commas
from cvdp_gym.gate.findings import Finding

__all__ = ["ATTRIBUTES", "DIRECTIVES", "TOOL_MACROS", "Directives", "read_directives", "resolve_include", "tool_macro"]

#: The compiler directives (IEEE 1800-2017 clause 22) an answer may write besides the macros
#: it defines: those every tool reads alike. Left out: `` `pragma `` (what it says is for one
#: tool), `` `__FILE__ `` and `` `line `` (the file's name differs between the simulator's run
#: and the synthesiser's), `` `unconnected_drive `` (Yosys leaves the ports undriven), and
#: `` `begin_keywords `` (the tools differ in the keyword sets they know).
DIRECTIVES = frozenset({
    "define", "undef", "undefineall", "ifdef", "ifndef", "elsif", "else", "endif", "include",
    "timescale", "default_nettype", "resetall", "celldefine", "endcelldefine", "__LINE__",
})
#: Every other directive a tool knows (the standards' and the simulators' own): refused, since
#: one tool honours what another ignores (Yosys leaves ``unconnected_drive``'s ports undriven).
OTHER_DIRECTIVES = frozenset({
    "pragma", "protect", "endprotect", "line", "__FILE__", "unconnected_drive", "nounconnected_drive",
    "begin_keywords", "end_keywords", "undefineall", "default_decay_time", "default_trireg_strength",
    "delay_mode_distributed", "delay_mode_path", "delay_mode_unit", "delay_mode_zero", "accelerate",
    "noaccelerate", "expand_vectornets", "noexpand_vectornets", "autoexpand_vectornets", "enable_portfaults",
    "disable_portfaults", "suppress_faults", "nosuppress_faults", "remove_gatenames", "noremove_gatenames",
    "remove_netnames", "noremove_netnames", "uselib", "portcoerce", "noportcoerce", "inline", "default_discipline",
    "default_transition", "systemc_header", "systemc_interface", "systemc_imp_header", "systemc_implementation",
    "systemc_ctor", "systemc_dtor", "verilog", "verilator_config", "coverage_block_off", "error",
})
#: Macros the tools this project runs predefine (Icarus, Verilator, Yosys's ``read_verilog``
#: and ``-formal``, cocotb's builds, slang): never a safe include-guard name.
TOOL_MACROS = frozenset({
    "__ICARUS__", "__ICARUS_SYNTH__", "__VAMS_ENABLE__", "VERILATOR", "verilator", "verilator3",
    "VERILATOR_TIMING", "SYSTEMVERILOG", "SV_COV_START", "coverage_block_off", "SYNTHESIS", "YOSYS",
    "FORMAL", "SIMULATION", "COCOTB_SIM", "__slang__", "__slang_major__", "__slang_minor__",
})
#: Name prefixes the tools keep for their own macros (Verilator's ``SV_COV_*``, ``__...``).
TOOL_MACRO_PREFIXES = ("SV_COV_", "VERILATOR", "verilator", "__", "YOSYS", "SYNTHESIS", "FORMAL", "COCOTB")


def tool_macro(name: str) -> bool:
    """Whether a tool this project runs predefines ``name``, or keeps names like it."""
    return name in TOOL_MACROS or name.startswith(TOOL_MACRO_PREFIXES)


#: Attributes that change no tool's reading of the design (synthesis hints kept for the netlist).
ATTRIBUTES = frozenset({
    "keep", "dont_touch", "keep_hierarchy", "ram_style", "rom_style", "ramstyle", "romstyle",
    "syn_ramstyle", "syn_romstyle", "syn_keep", "mark_debug", "async_reg", "max_fanout", "src",
})
#: First words of a comment that a tool reads as a pragma.
_PRAGMA_COMMENT = re.compile(r"\s*(synopsys|synthesis|pragma|translate_off|translate_on|rtl_synthesis|cadence|ambit|exemplar)\b", re.I)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_TOKEN = re.compile(
    r"(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))"
    rf"|(?P<string>{_STRING.pattern})"
    r"|(?P<escaped>\\\S+)"
    r'|(?P<paste>``|`"|`\\`")'
    r"|`(?P<directive>[A-Za-z_]\w*)"
    r"|(?P<attribute>\(\*(?!\))(?P<attribute_body>.*?)(?:\*\)|\Z))",
    re.S,
)
_NAME_AFTER = re.compile(r"[ \t]*([A-Za-z_]\w*)")
_INCLUDE_PATH = re.compile(r'[ \t]*(?:"([^"\n]*)"|<([^>\n]*)>)')
#: Where a CVDP harness mounts the answer's workspace (an include may name its files from there).
_ANSWER_ROOT = "/code/"
_DEPTH = 32


@dataclass
class Directives:
    """What :func:`read_directives` found: findings, and the files the answer's includes
    reach, by the path slang looks up (the includer's folder joined to the name) and by the
    resolved path, each with its text."""

    findings: list[Finding] = field(default_factory=list)
    included: dict[str, str] = field(default_factory=dict)


def resolve_include(name: str, includer: str, known: Callable[[str], bool]) -> str | None:
    """The answer's file an `` `include "name" `` in ``includer`` reads, or None: the
    includer's folder first, then the answer's root (as ``+incdir`` and the working folder
    give it), ``/code/`` taken as that root; never a path above it."""
    if not name or "\x00" in name:
        return None
    if name.startswith(_ANSWER_ROOT):
        name = name[len(_ANSWER_ROOT):]
    elif name.startswith("/"):
        return None
    for candidate in (posixpath.join(posixpath.dirname(includer), name), name):
        path = posixpath.normpath(candidate)
        if not path.startswith("..") and not path.startswith("/") and known(path):
            return path
    return None


def read_directives(
    files: Mapping[str, str],
    *,
    supplied: Mapping[str, str] | None = None,
    readable: Callable[[str], str | None] | None = None,
) -> Directives:
    """Check the directives of the answer's ``files`` (their includes followed) and collect
    the included files. ``supplied``: the problem's own files (their definitions count, their
    own directives are not checked); ``readable``: more of the answer's files by path (an
    agent's workspace), read only when an include names them."""
    reader = _Reader(files, dict(supplied or {}), readable)
    for text in reader.supplied.values():  # the problem's files: their definitions are given
        for match in _TOKEN.finditer(text):
            if match.group("directive") in ("define", "undef"):
                name = _NAME_AFTER.match(text, match.end())
                if name:
                    reader.set_macro(match.group("directive"), name.group(1))
    for path, text in files.items():
        if path not in reader.supplied:
            reader.read(path, text, stack=[path])
    return reader.found


class _Reader:
    """One reading of an answer, in the order a tool reads it: the macros whose state it set
    so far, the files it can reach, and what it found."""

    def __init__(self, files: Mapping[str, str], supplied: dict[str, str], readable: Callable[[str], str | None] | None):
        self.files, self.supplied, self.readable = files, supplied, readable
        self.found = Directives()
        self.state: set[str] = set()  # macros whose state the answer has set (defined or undefined)
        self.defined: set[str] = set()
        self._texts: dict[str, str | None] = {}

    def set_macro(self, directive: str, name: str) -> None:
        """A `` `define `` or `` `undef `` of ``name``."""
        self.state.add(name)
        (self.defined.add if directive == "define" else self.defined.discard)(name)

    def text(self, path: str) -> str | None:
        """A file of the answer or the problem by path (None: no such file), read once."""
        if path not in self._texts:
            if path in self.files:
                self._texts[path] = self.files[path]
            elif path in self.supplied:
                self._texts[path] = self.supplied[path]
            else:
                self._texts[path] = self.readable(path) if self.readable is not None else None
        return self._texts[path]

    def read(self, path: str, text: str, *, stack: list[str]) -> None:
        """One file in reading order; an include is read where it stands."""

        def add(offset: int, what: str) -> None:
            self.found.findings.append(Finding(path, text.count("\n", 0, offset) + 1, what))

        tokens = list(_TOKEN.finditer(text))
        for index, match in enumerate(tokens):
            if match.group("comment") is not None:
                pragma = _PRAGMA_COMMENT.match(match.group("comment")[2:])
                if pragma:
                    add(match.start(), f"`{match.group('comment')[:60].strip()}`: a comment one tool reads as a pragma ({pragma.group(1)}) and another does not")
                continue
            if match.group("attribute") is not None:
                for name in _attribute_names(match.group("attribute_body")):
                    if name not in ATTRIBUTES:
                        add(match.start(), f"`(* {name} *)`: an attribute that changes how one tool reads the design")
                continue
            directive = match.group("directive")
            if directive is None:
                continue
            if directive in ("define", "undef", "ifdef", "ifndef", "elsif"):
                name_match = _NAME_AFTER.match(text, match.end())
                if not name_match:
                    add(match.start(), f"`` `{directive} `` without a macro name")
                    continue
                name = name_match.group(1)
                if directive in ("define", "undef"):
                    self.set_macro(directive, name)
                elif name not in self.state and not _guard(directive, name, text, tokens, index):
                    add(match.start(), f"`` `{directive} {name} ``: a macro the answer does not define (a tool's or the harness's), so tools can read different designs")
            elif directive == "include":
                self._include(path, text, match, stack, add)
            elif directive in OTHER_DIRECTIVES and directive not in self.defined:
                add(match.start(), f"`` `{directive} ``: a directive that one tool honours and another does not")
            elif directive not in DIRECTIVES and directive not in self.defined and (directive in self.state or tool_macro(directive)):
                add(match.start(), f"`` `{directive} ``: a tool's macro (or one the answer undefined), whose value differs between tools")

    def _include(self, path: str, text: str, match: re.Match[str], stack: list[str], add: Callable[[int, str], None]) -> None:
        written = _INCLUDE_PATH.match(text, match.end())
        if not written:
            add(match.start(), "`` `include `` of a name that is not a literal")
            return
        name = written.group(1) if written.group(1) is not None else written.group(2)
        target = resolve_include(name, path, lambda candidate: self.text(candidate) is not None)
        if target is None:
            add(match.start(), f'`include "{name}": not one of the answer\'s own files')
            return
        if target in stack or len(stack) >= _DEPTH:
            add(match.start(), f'`include "{name}": includes itself')
            return
        body = self.text(target) or ""
        # slang looks an include up from the includer's folder: the text goes under that name too.
        looked_up = name if name.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(path), name))
        self.found.included[looked_up] = body
        self.found.included.setdefault(target, body)
        self.read(target, body, stack=[*stack, target])


def _attribute_names(body: str) -> list[str]:
    """The names an attribute instance sets (``(* keep, full_case = 1 *)``: keep, full_case);
    a name that is not a plain identifier is returned as written, and so refused."""
    blanked = _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', body)  # a comma in a value's string
    cuts = [-1, *top_level_commas(blanked), len(body)]
    items = (body[start + 1:end] for start, end in itertools.pairwise(cuts))
    return [name for item in items if (name := item.split("=", 1)[0].strip())]


def _guard(directive: str, name: str, text: str, tokens: list[re.Match[str]], index: int) -> bool:
    """An include guard: `` `ifndef X `` whose next directive is `` `define X ``, X no tool's."""
    if directive != "ifndef" or tool_macro(name):
        return False
    following = next((t for t in tokens[index + 1:] if t.group("directive") is not None or t.group("attribute") is not None), None)
    if following is None or following.group("directive") != "define":
        return False
    defined = _NAME_AFTER.match(text, following.end())
    return bool(defined) and defined.group(1) == name
