"""Deterministic wrong answers made from a reference design's text, each naming its kind.

Contract: ``mutate(text, kind, seed=..., key=..., top=..., header=...)`` returns the text with
one defect of ``kind`` (``KINDS``), or None where the kind does not apply (no ``if`` to
invert, no reset, no module header to rename...). The same arguments always give the same
text: every choice is drawn from a ``random.Random`` seeded with ``(seed, key, kind)``
(:func:`cvdp_gym.seeds.reference_mutant_random`).
Comments and string literals are never edited. ``problem_mutants(problem, count, ...)``
gives up to ``count`` mutants of a problem's reference (of ``kinds``, default ``KINDS``, in a
per-problem seeded order, never a text equal to the reference or to an earlier mutant), plus the zero-delay
loop where asked; ``benchmark_mutants`` picks, for a whole benchmark, the few problems that
also get that loop (each costs the official 30 s limit). A mutant may still be a correct
design: parity compares verdicts, it does not assume them. ``BEHAVIOUR_KINDS`` are the kinds that
keep a design building with its ports and change what it does (with ``width``, ``case-item``
and ``state-transition``, which parity's fixed set leaves out): the wrong answers a grader
that rewards behaviour must catch (``scripts/bench_reference.py``).

``header``: text the answer is appended to (VerilogEval v1's completion follows the
prompt's module header), read only to find the ports; ``top``: the module the test bench
instantiates (renamed by ``module-renamed``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.problems import Problem
from cvdp_gym.data.verilog_text import closing_paren
from cvdp_gym.errors import ConfigError
from cvdp_gym.seeds import reference_mutant_random

__all__ = ["BEHAVIOUR_KINDS", "HANG", "KINDS", "Mutant", "benchmark_mutants", "mutate", "problem_mutants", "reference_answer"]

#: The zero-delay infinite loop: the answer hangs until the flow's time limit.
HANG = "zero-delay-loop"
#: Kinds that change what the design computes (operators, constants, conditions, resets).
_CHANGES = (
    "and-or",
    "plus-minus",
    "eq-ne",
    "lt-ge",
    "not-removed",
    "bit-flip",
    "digit",
    "if-inverted",
    "reset-polarity",
)
KINDS = (
    *_CHANGES,
    "no-semicolon",
    "no-endmodule",
    "port-renamed",
    "module-renamed",
    "always-comb-no-inputs",
    "wire-in-always",
    "output-x",
    HANG,
)
#: Kinds that change behaviour and keep the design building with its interface.
BEHAVIOUR_KINDS = (*_CHANGES, "output-x", "width", "case-item", "state-transition")
#: What a mutant adds to a name or a design (recognisable in logs).
SUFFIX = "_cvdp_mutant"
Edit = tuple[int, int, str]  # replace text[start:end] by the string


@dataclass(frozen=True)
class Mutant:
    kind: str
    text: str


@dataclass(frozen=True)
class _Context:
    """What some kinds need beyond the text: the test bench's module, the answer's ports."""

    top: str | None
    ports: list[tuple[str, str]]


def _code_mask(text: str) -> list[bool]:
    """Per character: True where it is code (not a comment, a string or a directive line)."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        if at_line_start and text[i:].lstrip(" \t").startswith("`"):
            end = text.find("\n", i)
            end = n if end < 0 else end
            mask[i:end] = [False] * (end - i)
            i = end
            continue
        at_line_start = False
        two = text[i:i + 2]
        if two in ("//", "/*") or text[i] == '"':
            if two == "//":
                end = text.find("\n", i)
                end = n if end < 0 else end
            elif two == "/*":
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
            else:
                end = i + 1
                while end < n and text[end] not in '"\n':
                    end += 2 if text[end] == "\\" else 1
                end = min(n, end + 1)
            mask[i:end] = [False] * (end - i)
            i = end
            continue
        at_line_start = text[i] == "\n"
        i += 1
    return mask


def _sites(text: str, mask: list[bool], pattern: str, flags: int = 0) -> list[re.Match[str]]:
    return [m for m in re.finditer(pattern, text, flags) if mask[m.start()] and mask[m.end() - 1]]


def _swap(text: str, mask: list[bool], pairs: Iterable[tuple[str, str, str]]) -> list[Edit]:
    """``(pattern, replacement-when-matched-a, replacement-when-matched-b)`` sites."""
    edits: list[Edit] = []
    for pattern, a_to, b_to in pairs:
        for m in _sites(text, mask, pattern):
            edits.append((m.start(), m.end(), a_to if m.group(0).strip() != a_to.strip() else b_to))
    return edits


_HEADER = re.compile(r"\bmodule\s+([A-Za-z_]\w*)\s*(#\s*\()?")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DIRECTIONS = ("input", "output", "inout")
_DECL_WORDS = frozenset(
    ("input", "output", "inout", "wire", "reg", "logic", "signed", "unsigned", "var", "integer", "bit", "tri")
)


def _header_ports(text: str) -> list[tuple[str, str]]:
    """``(direction, name)`` of the first module header's ports (and body ``output x;`` lines)."""
    mask = _code_mask(text)
    match = next((m for m in _HEADER.finditer(text) if mask[m.start()]), None)
    if match is None:
        return []
    at = match.end()
    if match.group(2):  # #( parameters )
        end = closing_paren(text, at - 1)
        if end is None:
            return []
        at = end + 1
    opening = text.find("(", at)
    close = closing_paren(text, opening) if opening >= 0 else None
    ports: list[tuple[str, str]] = []
    if close is not None:
        direction = ""
        for piece in re.sub(r"\[[^\]]*\]", " ", text[opening + 1:close]).split(","):
            words = _IDENT.findall(piece.split("=")[0])
            found = next((w for w in words if w in _DIRECTIONS), None)
            direction = found or direction
            names = [w for w in words if w not in _DECL_WORDS]
            if names:
                ports.append((direction, names[-1]))
    for m in _sites(text, mask, r"\b(input|output|inout)\b([^;()]*);"):
        for piece in re.sub(r"\[[^\]]*\]", " ", m.group(2)).split(","):
            names = [w for w in _IDENT.findall(piece) if w not in _DECL_WORDS]
            if names and names[-1] not in {p for _, p in ports}:
                ports.append((m.group(1), names[-1]))
    return [(d or "input", p) for d, p in ports]


def _before_last_endmodule(text: str, mask: list[bool], snippet: str) -> list[Edit]:
    ends = _sites(text, mask, r"\bendmodule\b")
    return [(ends[-1].start(), ends[-1].start(), snippet)] if ends else []


def _and_or(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    single = _swap(text, mask, [(r"(?<![&|~^])[&|](?![&|=])", "|", "&")])
    return single or _swap(text, mask, [(r"&&|\|\|", "||", "&&")])


def _plus_minus(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return _swap(text, mask, [(r"(?<![+\-])[+\-](?![+\-=:>])", "-", "+")])


def _eq_ne(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return _swap(text, mask, [(r"(?<![=!<>])==(?!=)|(?<![=!])!=(?!=)", "!=", "==")])


def _lt_ge(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return _swap(text, mask, [(r"(?<![<>=])<(?![<=])|(?<![<>=])>=(?!=)", ">=", "<")])


def _not_removed(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return [(m.start(), m.end(), "") for m in _sites(text, mask, r"~")]


def _bit_flip(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return _swap(text, mask, [(r"\b1'b[01]\b", "1'b1", "1'b0")])


def _digit(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    edits: list[Edit] = []
    for m in _sites(text, mask, r"(?<![\w'$.])\d+(?![\w'.])|(?<=')[sS]?[dDhH][0-9_]*\d"):
        last = m.end() - 1
        edits.append((last, last + 1, str((int(text[last]) + 1) % 10)))
    return edits


def _if_inverted(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    edits: list[Edit] = []
    for m in _sites(text, mask, r"\bif\s*\("):
        close = closing_paren(text, m.end() - 1)
        if close is not None:
            edits.append((m.end(), close, f"!({text[m.end():close]})"))
    return edits


#: A reset's name: ``reset``, ``areset``, ``rst_n``, ``i_rst``... (not ``first`` or ``burst``).
_RESET = re.compile(r"\b(?:\w*_)?[as]?(?:rst|reset)\w*\b", re.I)


def _reset_polarity(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """Every edge and test of one reset, inverted together (one edit spanning them all)."""
    names = sorted({m.group(0) for m in _sites(text, mask, _RESET.pattern, re.I)})
    choices: list[Edit] = []
    for name in names:
        pattern = (rf"\b(posedge|negedge)\s+{name}\b|\bif\s*\(\s*(!|~)?\s*{name}\s*\)")
        found = _sites(text, mask, pattern)
        if not found:
            continue
        out, last = [], found[0].start()
        for m in found:
            out.append(text[last:m.start()])
            if m.group(1):
                out.append(("negedge" if m.group(1) == "posedge" else "posedge") + f" {name}")
            else:
                out.append(f"if ({name})" if m.group(2) else f"if (!{name})")
            last = m.end()
        choices.append((found[0].start(), found[-1].end(), "".join(out)))
    return choices


def _no_semicolon(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return [(m.start(), m.end(), "") for m in _sites(text, mask, r";")]


def _no_endmodule(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    ends = _sites(text, mask, r"\bendmodule\b")
    return [(ends[-1].start(), ends[-1].end(), "")] if ends else []


def _port_renamed(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """One port renamed everywhere in the answer (its header too, where the answer has one)."""
    choices: list[Edit] = []
    for _, port in ctx.ports:
        found = _sites(text, mask, rf"(?<![.\w$]){re.escape(port)}\b")
        if found:
            out, last = [], found[0].start()
            for m in found:
                out += [text[last:m.start()], port + SUFFIX]
                last = m.end()
            choices.append((found[0].start(), found[-1].end(), "".join(out)))
    return choices


def _module_renamed(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    headers = [m for m in _sites(text, mask, r"\bmodule\s+([A-Za-z_]\w*)")]
    chosen = [m for m in headers if m.group(1) == ctx.top] if ctx.top else headers[:1]
    return [(m.start(1), m.end(1), m.group(1) + SUFFIX) for m in chosen]


def _always_comb_no_inputs(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    name = "unused" + SUFFIX
    return _before_last_endmodule(text, mask, f"\n  logic {name};\n  always_comb {name} = 1'b0;\n")


def _wire_in_always(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """A ``reg``/``logic`` declaration made a ``wire`` (its procedural assignments then assign
    a wire), else a new wire assigned in an always block."""
    found = [(m.start(), m.end(), "wire") for m in _sites(text, mask, r"(?<!input )(?<!input\t)\b(reg|logic)\b")]
    name = "wire" + SUFFIX
    snippet = f"\n  wire {name};\n  always @(posedge {name}) {name} = 1'b0;\n"
    return found or _before_last_endmodule(text, mask, snippet)


def _output_x(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """Every assignment of one output (continuous or procedural) made ``'x``."""
    choices: list[Edit] = []
    for direction, port in ctx.ports:
        if direction != "output":
            continue
        pattern = rf"(?<![.\w$]){re.escape(port)}\s*(<=|=)(?!=)([^;]*);"
        found = [m for m in _sites(text, mask, pattern) if m.group(2).count("(") == m.group(2).count(")")]
        if found:
            out, last = [], found[0].start()
            for m in found:
                out += [text[last:m.start(2)], " 'x", ";"]
                last = m.end()
            choices.append((found[0].start(), found[-1].end(), "".join(out)))
    return choices


def _width(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """An internal signal's ``[N:0]`` made ``[N-1:0]`` (ports keep their widths)."""
    edits: list[Edit] = []
    for m in _sites(text, mask, r"\b(reg|logic|wire)\s+(?:signed\s+)?\[\s*(\d+)\s*:\s*0\s*\]"):
        line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if int(m.group(2)) >= 1 and not re.search(r"\b(input|output|inout)\b", line):
            edits.append((m.start(2), m.end(2), str(int(m.group(2)) - 1)))
    return edits


def _case_regions(text: str, mask: list[bool]) -> list[tuple[int, int]]:
    """(start, end) of each ``case``...``endcase`` body (nested cases give their own region)."""
    regions, stack = [], []
    for m in _sites(text, mask, r"\b(case[zx]?|endcase)\b"):
        if m.group(1) == "endcase":
            if stack:
                start = stack.pop()
                close = closing_paren(text, text.find("(", start)) if text.find("(", start) >= 0 else None
                regions.append((close + 1 if close is not None and close < m.start() else start, m.start()))
        else:
            stack.append(m.end())
    return regions


def _case_item(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """Two neighbouring case items' labels swapped (their statements now answer the other label)."""
    edits: list[Edit] = []
    for start, end in _case_regions(text, mask):
        labels = [
            m for m in _sites(text[:end], mask, r"(?m)^[ \t]*([\w'.]+(?:[ \t]*,[ \t]*[\w'.]+)*)[ \t]*:(?!:)")
            if m.start() >= start and m.group(1) != "default"
        ]
        for a, b in itertools.pairwise(labels):
            between = text[a.end(1):b.start(1)]
            edits.append((a.start(1), b.end(1), b.group(1) + between + a.group(1)))
    return edits


#: A state register's name: ``state``, ``next_state``, ``ns``, ``nstate``, ``state_d``...
_STATE = r"(?:\w*state\w*|ns|cs|next)"


def _state_transition(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    """One assignment of a named state to a state register made another named state."""
    sites = _sites(text, mask, rf"\b{_STATE}\s*(?:<=|=)\s*([A-Za-z_]\w*)\s*;", re.I)
    names = sorted({m.group(1) for m in sites})
    edits: list[Edit] = []
    for m in sites:
        others = [n for n in names if n != m.group(1)]
        if others:
            edits.append((m.start(1), m.end(1), others[(names.index(m.group(1)) + 1) % len(others)]))
    return edits


def _hang(text: str, mask: list[bool], ctx: _Context) -> list[Edit]:
    return _before_last_endmodule(text, mask, "\n  initial forever begin end\n")


_MAKERS: dict[str, Callable[[str, list[bool], _Context], list[Edit]]] = {
    "and-or": _and_or,
    "plus-minus": _plus_minus,
    "eq-ne": _eq_ne,
    "lt-ge": _lt_ge,
    "not-removed": _not_removed,
    "bit-flip": _bit_flip,
    "digit": _digit,
    "if-inverted": _if_inverted,
    "reset-polarity": _reset_polarity,
    "no-semicolon": _no_semicolon,
    "no-endmodule": _no_endmodule,
    "port-renamed": _port_renamed,
    "module-renamed": _module_renamed,
    "always-comb-no-inputs": _always_comb_no_inputs,
    "wire-in-always": _wire_in_always,
    "output-x": _output_x,
    "width": _width,
    "case-item": _case_item,
    "state-transition": _state_transition,
    HANG: _hang,
}


def mutate(text: str, kind: str, *, seed: int = 0, key: str = "", top: str | None = None, header: str = "") -> str | None:
    """``text`` with one defect of ``kind``, or None where it does not apply (see the module doc)."""
    if kind not in _MAKERS:
        raise ConfigError(f"unknown mutant kind {kind!r} (known: {', '.join(_MAKERS)})")
    ports = _header_ports(header + "\n" + text) if header else _header_ports(text)
    edits = _MAKERS[kind](text, _code_mask(text), _Context(top, ports))
    if not edits:
        return None
    start, end, new = reference_mutant_random(seed, key, kind).choice(edits)
    mutated = text[:start] + new + text[end:]
    return None if mutated == text else mutated


def reference_answer(problem: Problem) -> tuple[str, str | None, str]:
    """(the reference answer's text, the top module, the header it follows) for a problem."""
    target = problem.targets[0] if problem.targets else ""
    text = (problem.reference or {}).get(target, "")
    bench = BENCHMARKS.get(problem.benchmark)
    top = problem.extra.get("module") or (bench.top_module if bench is not None else None)
    return text, (str(top) if top else None), str(problem.extra.get("header") or "")


def problem_mutants(
    problem: Problem, count: int, *, seed: int = 0, hang: bool = False, kinds: Iterable[str] = KINDS,
) -> list[Mutant]:
    """Up to ``count`` mutants of ``problem``'s reference, distinct ``kinds`` (plus the loop if ``hang``)."""
    text, top, header = reference_answer(problem)
    if not text:
        return []
    kinds = [k for k in kinds if k != HANG]
    reference_mutant_random(seed, problem.id, "order").shuffle(kinds)
    seen = {text}
    out: list[Mutant] = []
    for kind in [*kinds, *([HANG] if hang else [])]:
        if len(out) >= count and kind != HANG:
            continue
        mutated = mutate(text, kind, seed=seed, key=problem.id, top=top, header=header)
        if mutated is not None and mutated not in seen:
            seen.add(mutated)
            out.append(Mutant(kind, mutated))
    return out


def benchmark_mutants(
    problems: Iterable[Problem], count: int, *, seed: int = 0, hangs: int = 3,
) -> list[tuple[Problem, Mutant]]:
    """``count`` mutants per problem, and the zero-delay loop for ``hangs`` problems in all
    (chosen by the seed: each costs the official flow's whole time limit)."""
    chosen = list(problems)
    hanging = set(sorted((p.id for p in chosen), key=lambda pid: reference_mutant_random(seed, pid, HANG).random())[:max(0, hangs)])
    return [(p, m) for p in chosen for m in problem_mutants(p, count, seed=seed, hang=p.id in hanging)]
