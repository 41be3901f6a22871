"""A documented subset of SVA lowered to what Yosys 0.40's reader takes: immediate assertions.

Contract: ``lower_properties(text, clock=..., edge=...)`` reads a model's answer (statements
meant for the end of a design's top module) and returns a ``Lowered``: the answer's other
statements unchanged (``answer``), one checker block per supported property (``checks``),
and every property found, each lowered or with a one-line reason naming the construct it
does not support. It never raises on what the model wrote, and never drops a property
silently: each ``assert``/``assume``/``cover``/``restrict property`` becomes an entry.

Why: open-source Yosys 0.40 rejects clocked concurrent assertions (``assert property
(@(posedge clk) a |-> b)``) but reads immediate ``assert(...)`` in ``always`` blocks, with
``$past``, ``$rose``, ``$fell``, ``$stable``, ``$onehot``, ``$onehot0`` and ``$countones``.

The subset (anything else is unsupported, with its reason):

- ``[label:] assert property ([@(posedge|negedge clk)] [disable iff (expr)] PROP) [else ...];``
  and ``property name; PROP endproperty`` + ``assert property (name);`` (no arguments);
- PROP: ``SEQ``, ``SEQ |-> SEQ`` or ``SEQ |=> SEQ``; SEQ: boolean Verilog expressions
  joined by fixed delays ``##N`` (N a decimal constant, ``##0`` allowed), optionally starting
  with one (``a |-> ##2 b``); a parenthesised SEQ inside a SEQ is flattened;
- one clock, the design's, on the design's edge; a property with no clock event takes it.

Unsupported: ranges and repetition (``##[m:n]``, ``[*N]``, ``[->N]``, ``[=N]``), sequence and
property operators (``throughout``, ``within``, ``intersect``, ``and``, ``or``, ``not``,
``until``, ``s_eventually``, ``first_match``, ``if`` ...), ``sequence`` declarations, local
variables, property arguments, a second clock, ``cover``/``assume``/``restrict property``.

The lowering, for a property whose terms sit at fixed offsets 0..L (L the last term's):
the check runs at the cycle of the last term, a term at offset o read as
``$past((term), L-o)``; ``|=>`` puts the consequent one cycle after the antecedent's end.
Property ``i`` becomes ``always @(posedge clk) if (__cvdp_sel == i && enabled &&
antecedent) assert(consequent);``, where ``__cvdp_sel`` is a wire nobody drives (the
checker sets it, so one Yosys run checks one property alone) and ``enabled`` holds once the
whole window lies after the first step (the reset step: ``__cvdp_cycles``, a saturating
counter from 0). What differs from a commercial tool:

- ``disable iff (d)`` skips the check when ``d`` is true at any cycle of the window
  (sampled at clock edges), where SVA aborts asynchronously as soon as ``d`` rises: a
  ``d`` pulse between two edges is not seen;
- a user ``$past`` reaching before the window's first cycle reads the step before it (the
  reset step), not SVA's initial value;
- a property with an antecedent also gets a vacuity probe, index ``i + count``:
  ``assert(!antecedent)`` on the same window; a counterexample to the probe shows the
  antecedent can hold.

A design without a clock (``clock=None``) gets ``always @* if (__cvdp_sel == i) assert(...);``
and no delays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cvdp_gym.data.verilog_text import closing_paren

#: The checker's own names: an answer may not use them.
PREFIX = "__cvdp_"
SELECT, CYCLES = PREFIX + "sel", PREFIX + "cycles"
_IDENT = r"[A-Za-z_][A-Za-z0-9_$]*"
_HEAD = re.compile(
    rf"(?:\b(?P<label>{_IDENT})\s*:\s*)?\b(?P<kind>assert|assume|cover|restrict)\s+property\b"
)
_BLOCK = re.compile(rf"\b(?P<kind>property|sequence)\s+(?P<name>{_IDENT})\s*(?P<args>\([^;]*\))?\s*;")
_DEFAULT = re.compile(r"\bdefault\s+(?:clocking|disable)\b")
_EVENT = re.compile(rf"^@\s*\(\s*(?P<edge>posedge|negedge)\s+(?P<clock>{_IDENT})\s*\)")
_DISABLE = re.compile(r"^disable\s+iff\s*\(")
#: Constructs outside the subset, each with the name a reason gives it.
_UNSUPPORTED = (
    (re.compile(r"##\s*\["), "delay ranges (##[m:n])"),
    (re.compile(r"##\s*[A-Za-z_(]"), "non-constant delays (##name)"),
    (re.compile(r"\[\s*\*"), "consecutive repetition ([*N])"),
    (re.compile(r"\[\s*->"), "goto repetition ([->N])"),
    (re.compile(r"\[\s*="), "non-consecutive repetition ([=N])"),
    (re.compile(r"\[\s*\+\s*\]"), "repetition ([+])"),
    (re.compile(r"#-#|#=#"), "followed-by (#-#, #=#)"),
    (re.compile(r"@\s*\("), "a clock event inside the property (multi-clock)"),
    (re.compile(r"\.\s*(?:triggered|matched)\b"), "sequence methods (.triggered, .matched)"),
    *(
        (re.compile(rf"\b{word}\b"), f"'{word}'")
        for word in (
            "throughout", "within", "intersect", "first_match", "s_eventually", "eventually",
            "until", "s_until", "until_with", "s_until_with", "nexttime", "s_nexttime", "always",
            "s_always", "strong", "weak", "accept_on", "reject_on", "sync_accept_on",
            "sync_reject_on", "and", "or", "not", "implies", "iff", "if", "case", "disable",
        )
    ),
)


@dataclass(frozen=True)
class Property:
    """One property of the answer: lowered, or unsupported with the reason."""

    index: int
    #: The label the answer gave it, or ``line N`` (its line in the answer).
    label: str
    source: str
    #: The checker block (empty when unsupported).
    lowered: str = ""
    reason: str = ""
    has_antecedent: bool = False
    #: Cycles from the window's first sample to its last (the check's cycle).
    span: int = 0

    @property
    def supported(self) -> bool:
        return not self.reason


@dataclass(frozen=True)
class Lowered:
    """What ``lower_properties`` made of an answer (see the module docstring)."""

    #: The answer without its property statements (line numbers kept: removed text is blank).
    answer: str
    #: The checker: its select wire, cycle counter and one block per property and probe.
    checks: str
    properties: tuple[Property, ...]
    select_width: int

    @property
    def text(self) -> str:
        """Everything to insert before the top module's ``endmodule``."""
        return f"{self.answer}\n{self.checks}"


def lower_properties(text: str, *, clock: str | None, edge: str = "posedge") -> Lowered:
    """The answer's properties lowered to immediate assertions (see the module docstring)."""
    code = _blank_comments(text)
    if PREFIX in code:
        bad = Property(0, "answer", PREFIX, reason=f"the answer uses the checker's reserved prefix {PREFIX}")
        return Lowered("", "", (bad,), 1)
    cut: list[tuple[int, int]] = []
    named: dict[str, str] = {}
    sequences: set[str] = set()
    for match in _BLOCK.finditer(code):
        end_word = "end" + match.group("kind")
        end = re.compile(rf"\b{end_word}\b").search(code, match.end())
        stop = end.end() if end else len(code)
        cut.append((match.start(), stop))
        if match.group("kind") == "sequence":
            sequences.add(match.group("name"))
        else:
            body = code[match.end(): end.start() if end else stop].strip().rstrip(";").strip()
            named[match.group("name")] = "(arguments)" if match.group("args") else body
    raw: list[tuple[str, str, str]] = []  # (label, source, body or reason marker)
    for match in _HEAD.finditer(code):
        if any(a <= match.start() < b for a, b in cut):
            continue
        open_at = _skip_space(code, match.end())
        close = _closing(code, open_at) if open_at < len(code) and code[open_at] == "(" else -1
        stop = _statement_end(code, close + 1 if close >= 0 else match.end())
        cut.append((match.start(), stop))
        line = code.count("\n", 0, match.start()) + 1
        label = match.group("label") or f"line {line}"
        source = " ".join(text[match.start():stop].split())
        if match.group("kind") != "assert":
            raw.append((label, source, f"!{match.group('kind')} property (only assert property is checked)"))
        elif close < 0:
            raw.append((label, source, "!an assert property without a parenthesised property"))
        else:
            raw.append((label, source, code[open_at + 1: close].strip()))
    for match in _DEFAULT.finditer(code):
        stop = _statement_end(code, match.end())
        cut.append((match.start(), stop))
        line = code.count("\n", 0, match.start()) + 1
        raw.append((f"line {line}", " ".join(text[match.start():stop].split()), "!default clocking/disable iff"))
    count = len(raw)
    width = max(1, (2 * count - 1).bit_length())
    lowered = [
        _lower(i, label, source, body, named, sequences, clock, edge, width, count)
        for i, (label, source, body) in enumerate(raw)
    ]
    span = max((p.span for p in lowered if p.supported), default=0)
    return Lowered(_cut(text, cut), _checker(lowered, clock, edge, width, span), tuple(lowered), width)


def _lower(
    index: int, label: str, source: str, body: str, named: dict[str, str], sequences: set[str],
    clock: str | None, edge: str, width: int, count: int,
) -> Property:
    def unsupported(reason: str) -> Property:
        return Property(index, label, source, reason=reason)

    if body.startswith("!"):
        return unsupported(body[1:])
    if body in named:
        body = named[body]
        if body == "(arguments)":
            return unsupported("a property with arguments")
    event = _EVENT.match(body)
    if event:
        if clock is None:
            return unsupported(f"a clock event (@({event.group('edge')} {event.group('clock')})) in a design without a clock")
        if event.group("clock") != clock or event.group("edge") != edge:
            return unsupported(f"clock @({event.group('edge')} {event.group('clock')}): the design runs on @({edge} {clock})")
        body = body[event.end():].strip()
    disable = ""
    found = _DISABLE.match(body)
    if found:
        close = _closing(body, found.end() - 1)
        if close < 0:
            return unsupported("an unbalanced disable iff (...)")
        disable = body[found.end(): close].strip()
        body = body[close + 1:].strip()
    for name in sequences:
        if re.search(rf"\b{re.escape(name)}\b", body):
            return unsupported(f"a named sequence ({name}: sequence declarations)")
    for pattern, what in _UNSUPPORTED:
        if pattern.search(body):
            return unsupported(f"unsupported SVA: {what}")
    if not body:
        return unsupported("an empty property")
    parts = _split_top(body, ("|->", "|=>"))
    if len(parts) > 3:
        return unsupported("nested implications")
    terms = _sequence(parts[0], 0)
    if isinstance(terms, str):
        return unsupported(terms)
    antecedent: list[tuple[str, int]] = []
    if len(parts) == 3:
        antecedent = terms
        start = terms[-1][1] + (1 if parts[1] == "|=>" else 0)
        terms = _sequence(parts[2], start)
        if isinstance(terms, str):
            return unsupported(terms)
    span = max(offset for _, offset in antecedent + terms)
    if clock is None and span:
        return unsupported("delays (##N, |=>) in a design without a clock")

    def window(items: list[tuple[str, int]]) -> str:
        rendered = [f"({t})" if o == span else f"$past(({t}), {span - o})" for t, o in items]
        return " && ".join(rendered) if len(rendered) > 1 else f"!(!{rendered[0]})"

    guard = [f"{SELECT} == {width}'d{{sel}}"]
    if clock is not None:
        guard.append(f"{CYCLES} > {span}")
    if disable:
        samples = [f"({disable})" if k == 0 else f"$past(({disable}), {k})" for k in range(span + 1)]
        guard.append("!(" + " || ".join(samples) + ")")
    if antecedent:
        guard.append(window(antecedent))
    head = f"always @({edge} {clock})" if clock is not None else "always @*"
    block = f"  {head} if ({' && '.join(guard).format(sel=index)}) assert({window(terms)});\n"
    if antecedent:
        probe_guard = " && ".join(guard[:-1]).format(sel=index + count)
        block += f"  {head} if ({probe_guard}) assert(!({window(antecedent)}));\n"
    return Property(index, label, source, lowered=block, has_antecedent=bool(antecedent), span=span)


def _sequence(text: str, start: int) -> list[tuple[str, int]] | str:
    """A SEQ's boolean terms with their offsets from ``start``, or why it is outside the subset."""
    text = text.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1 and "##" in text:
        text = text[1:-1].strip()
    pieces = _split_top(text, ("##",))
    terms: list[tuple[str, int]] = []
    offset = start
    first = pieces[0].strip()
    if first:
        inner = _term(first, offset)
        if isinstance(inner, str):
            return inner
        terms += inner
        offset = terms[-1][1]
    for i in range(1, len(pieces), 2):
        match = re.match(r"\s*(\d+)\s*", pieces[i + 1])
        if not match:
            return "a delay that is not a decimal constant (##N)"
        offset += int(match.group(1))
        rest = pieces[i + 1][match.end():].strip()
        if not rest:
            return "a delay with nothing after it"
        inner = _term(rest, offset)
        if isinstance(inner, str):
            return inner
        terms += inner
        offset = terms[-1][1]
    if not terms:
        return "an empty sequence"
    return terms


def _term(text: str, offset: int) -> list[tuple[str, int]] | str:
    """One boolean term (or a parenthesised sequence, flattened) at ``offset``."""
    if "##" in text:
        if text.startswith("(") and _closing(text, 0) == len(text) - 1:
            return _sequence(text, offset)
        return "a sequence inside an expression"
    if _split_top(text, ("|->", "|=>"))[1:]:
        return "nested implications"
    return [(text, offset)]


def _checker(properties: list[Property], clock: str | None, edge: str, width: int, span: int) -> str:
    """The checker's declarations and every property's block."""
    lines = [f"  wire [{width - 1}:0] {SELECT};\n"]
    if clock is not None:
        bits = max(1, (span + 1).bit_length())
        lines.append(f"  reg [{bits - 1}:0] {CYCLES} = {bits}'d0;\n")
        lines.append(
            f"  always @({edge} {clock}) if ({CYCLES} != {bits}'d{span + 1}) {CYCLES} <= {CYCLES} + {bits}'d1;\n"
        )
    lines += [p.lowered for p in properties if p.supported]
    return "".join(lines)


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span blanked, its line breaks kept (line numbers stay the answer's)."""
    out = list(text)
    for start, stop in spans:
        for i in range(start, stop):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def _blank_comments(text: str) -> str:
    """``text`` with comments and the insides of strings blanked (same length and lines)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            start, stop = i, text.find("\n", i)
            stop = n if stop < 0 else stop
        elif text.startswith("/*", i):
            start, stop = i, text.find("*/", i + 2)
            stop = n if stop < 0 else stop + 2
        elif text[i] == '"':
            start = stop = i + 1
            while stop < n and text[stop] not in '"\n':
                stop += 2 if text[stop] == "\\" else 1
            stop = min(stop, n)
        else:
            i += 1
            continue
        for k in range(start, stop):
            if out[k] != "\n":
                out[k] = " "
        i = stop + 1
    return "".join(out)


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _statement_end(text: str, i: int) -> int:
    """The index after the ``;`` that ends the statement at ``i`` (an ``else`` action's
    ``begin ... end`` included)."""
    depth = 0
    for match in re.compile(r"\bbegin\b|\bend\b|[();]").finditer(text, i):
        token = match.group(0)
        if token in ("(", "begin"):
            depth += 1
        elif token in (")", "end"):
            depth = max(0, depth - 1)
            if token == "end" and depth == 0:
                follow = _skip_space(text, match.end())
                return follow + 1 if text.startswith(";", follow) else match.end()
        elif depth == 0:
            return match.end()
    return len(text)


def _split_top(text: str, operators: tuple[str, ...]) -> list[str]:
    """``text`` split at ``operators`` outside parentheses and brackets: pieces and the
    operators between them, alternating."""
    out, depth, last, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            op = next((o for o in operators if text.startswith(o, i)), None)
            if op:
                out += [text[last:i], op]
                i += len(op)
                last = i
                continue
        i += 1
    return [*out, text[last:]]


def _closing(text: str, open_at: int) -> int:
    """:func:`closing_paren`, -1 when never closed."""
    found = closing_paren(text, open_at)
    return -1 if found is None else found
