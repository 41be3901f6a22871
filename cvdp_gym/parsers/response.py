"""Extract the files a single-shot (non-agentic) CVDP answer must provide.

Compatible with the official CVDP tool, which takes the first fenced block for one target
(else the raw text) and a ``{"code": [{"<path>": "<text>"}]}`` JSON object for several,
but more forgiving: thinking and Harmony analysis are dropped, the right block is chosen
among several, files may be named next to their blocks, and blocks are matched to targets
by the module they declare. Nothing here raises on any input.

This module holds the entry point, :func:`extract_files`, and the choice of blocks; the
design-unit scanning it matches blocks with is :mod:`.hdl_units`, and JSON answers are
read by :mod:`.json_answer`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ._common import (
    FencedBlock,
    find_fenced_blocks,
    find_fenced_blocks_official,
    norm_path,
    path_stem,
    strip_thinking,
    with_newline,
)
from .harmony import final_text, is_harmony, parse_harmony
from .hdl_units import HDL_EXTS, HDL_LANGS, raw_region, split_units, units
from .json_answer import JSON_LANGS, from_json

__all__ = ["HDL_LANGS", "Extraction", "answer_text", "extract_files"]

_LANGS_BY_EXT: dict[str, frozenset[str]] = {
    ".py": frozenset({"python", "py", "python3"}),
    ".json": frozenset({"json"}),
    ".md": frozenset({"markdown", "md"}),
    ".txt": frozenset({"text", "txt", "plaintext"}),
}
_SPECIAL_RE = re.compile(r"<\|[a-z_]+\|>")


@dataclass
class Extraction:
    """What :func:`extract_files` found, and how."""

    files: dict[str, str] = field(default_factory=dict)  # target path -> file text
    missing: list[str] = field(default_factory=list)
    method: str = "none"  # fenced | raw | json | named_blocks | module_match (joined by "+")
    blocks_found: int = 0
    had_think: bool = False
    harmony: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def found_all(self) -> bool:
        """True when every target got a file."""
        return not self.missing


# ----------------------------------------------------------------------------------------
# Block naming: which target a block is labelled and named as
# ----------------------------------------------------------------------------------------


def _ext(target: str) -> str:
    return posixpath.splitext(norm_path(target))[1].lower()


def _lang_ok(lang: str, target: str) -> bool:
    """Whether a block's label suits the target: unlabelled always does."""
    if not lang:
        return True
    ext = _ext(target)
    if ext in HDL_EXTS:
        return lang in HDL_LANGS
    allowed = _LANGS_BY_EXT.get(ext)
    return True if allowed is None else lang in allowed


def _mentioned_target(line: str, targets: list[str]) -> str | None:
    """The single target a line names (full path beats basename), or None if none/ambiguous."""
    scores: dict[str, int] = {}
    for t in targets:
        nt = norm_path(t)
        base = posixpath.basename(nt)
        if not base:
            continue
        for m in re.finditer(r"(?<![\w.-])" + re.escape(base) + r"(?![\w-]|\.\w)", line):
            prefix = line[: m.start()]
            directory = nt[: -len(base)]
            score = 2 if directory and prefix.endswith(directory) else 1
            if not directory:
                score = 2
            scores[t] = max(scores.get(t, 0), score)
    if not scores:
        return None
    best = max(scores.values())
    winners = [t for t, s in scores.items() if s == best]
    if len(winners) != 1:
        return None
    # A basename match is ambiguous when two targets share that basename.
    win = winners[0]
    if best == 1:
        base = posixpath.basename(norm_path(win))
        if sum(1 for t in targets if posixpath.basename(norm_path(t)) == base) > 1:
            return None
    return win


_COMMENT_PREFIXES = ("//", "/*", "#", "--", "*")


def _block_name(block: FencedBlock, targets: list[str]) -> tuple[str | None, bool]:
    """The target a block is named as: by a first comment line inside it, else by the
    nearest non-empty line above it. Returns (target, name_line_inside_is_not_a_comment)."""
    lines = block.text.split("\n")
    first = next((ln for ln in lines if ln.strip()), "")
    fs = first.strip()
    if fs and len(fs) < 200:
        is_comment = fs.startswith(_COMMENT_PREFIXES)
        bare_path = not is_comment and len(fs.split()) <= 2 and ("/" in fs or "." in fs)
        if is_comment or bare_path:
            t = _mentioned_target(fs, targets)
            if t is not None:
                foreign = fs.startswith(("#", "--")) and _ext(t) in HDL_EXTS
                return t, bare_path or foreign
    above = [ln for ln in block.before.split("\n") if ln.strip()]
    for ln in reversed(above[-2:]):
        if len(ln) > 300:
            continue
        t = _mentioned_target(ln, targets)
        if t is not None:
            return t, False
    return None, False


def _drop_first_nonempty_line(text: str) -> str:
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if ln.strip():
            return "\n".join(lines[:i] + lines[i + 1 :])
    return text


# ----------------------------------------------------------------------------------------
# Main entry point
# ----------------------------------------------------------------------------------------


def answer_text(response: str) -> tuple[str, Extraction]:
    """The answer without thinking or Harmony analysis, and an ``Extraction`` noting what was
    dropped (every extractor starts here)."""
    ex = Extraction()
    return _prepare(response if isinstance(response, str) else "", ex), ex


def _prepare(response: str, ex: Extraction) -> str:
    text, _, had_think = strip_thinking(response)
    ex.had_think = had_think
    if had_think:
        ex.notes.append("dropped thinking")
    if is_harmony(text):
        ex.harmony = True
        ft = final_text(text)
        if ft is not None:
            ex.notes.append("used the Harmony final channel")
            return ft
        # No final answer: keep everything except analysis (thinking) messages, so code
        # written outside the Harmony structure is still found.
        parts: list[str] = []
        pos = 0
        for m in parse_harmony(text):
            parts.append(text[pos : max(pos, m.start)])
            pos = max(pos, m.end)
            if m.channel != "analysis" and m.recipient is None:
                parts.append(f"\n{m.content}\n")
        parts.append(text[pos:])
        ex.notes.append("Harmony output has no final-channel message")
        return _SPECIAL_RE.sub("\n", "".join(parts))
    return text


def _pick_single(blocks: list[FencedBlock], target: str, ex: Extraction) -> FencedBlock | None:
    """Among label-compatible blocks: declares the expected module > named as the target >
    declares any module > first; ties go to the earlier block."""
    expected = path_stem(target).lower()
    best: tuple[int, int] | None = None
    chosen: FencedBlock | None = None
    for idx, b in enumerate(blocks):
        if not b.text.strip() or not _lang_ok(b.lang, target):
            continue
        names = [u.lower() for u in units(b.text)]
        score = (4 if expected in names else 0) + (1 if names else 0)
        if _block_name(b, [target])[0] == target:
            score += 2
        key = (score, -idx)
        if best is None or key > best:
            best, chosen = key, b
    if chosen is not None and sum(1 for b in blocks if b.text.strip()) > 1:
        ex.notes.append(f"chose block {blocks.index(chosen) + 1} of {len(blocks)}")
    return chosen


def _extract_single(text: str, blocks: list[FencedBlock], target: str, ex: Extraction) -> None:
    chosen = _pick_single(blocks, target, ex)
    if chosen is not None:
        ex.files[target] = with_newline(chosen.text)
        ex.method = "fenced"
        if not chosen.closed:
            ex.notes.append("code fence not closed (output truncated?)")
        return
    files, _ = from_json(text, blocks, [target])
    if files:
        ex.files.update(files)
        ex.method = "json"
        return
    usable = [b for b in blocks if b.text.strip() and b.lang not in JSON_LANGS]
    expected = path_stem(target).lower()
    for pred in (
        lambda b: expected in [u.lower() for u in units(b.text)],
        lambda b: bool(units(b.text)),
    ):
        hit = next((b for b in usable if pred(b)), None)
        if hit is not None:
            ex.files[target] = with_newline(hit.text)
            ex.method = "fenced"
            ex.notes.append(f"used a block labelled {hit.lang!r}")
            return
    raw = raw_region(_outside_blocks(text, blocks))
    if raw is not None:
        ex.files[target] = raw
        ex.method = "raw"
        return
    first = next((b for b in blocks if b.text.strip()), None)
    if first is not None:
        # The official tool's rule: the first block, whatever its label.
        ex.files[target] = with_newline(first.text)
        ex.method = "fenced"
        ex.notes.append(f"no suitable block; used the first one (labelled {first.lang!r})")


def _outside_blocks(text: str, blocks: list[FencedBlock]) -> str:
    if not blocks:
        return text
    parts: list[str] = []
    pos = 0
    for b in blocks:
        if b.start >= pos:
            parts.append(text[pos : b.start])
            pos = b.end
    parts.append(text[pos:])
    return "\n".join(parts)


def _extract_multi(
    text: str, blocks: list[FencedBlock], targets: list[str], ex: Extraction
) -> None:
    methods: list[str] = []
    used: set[int] = set()
    files, json_idx = from_json(text, blocks, targets)
    if files:
        ex.files.update(files)
        methods.append("json")
        if json_idx is not None:
            used.add(json_idx)
    for idx, b in enumerate(blocks):
        if idx in used or not b.text.strip() or b.lang in JSON_LANGS:
            continue
        t, drop = _block_name(b, targets)
        if t is None:
            continue
        if t in ex.files:
            if "named_blocks" in methods:
                ex.notes.append(f"{t} named by several blocks; kept the first")
            continue
        body = _drop_first_nonempty_line(b.text) if drop else b.text
        ex.files[t] = with_newline(body)
        used.add(idx)
        if "named_blocks" not in methods:
            methods.append("named_blocks")
    remaining = [t for t in targets if t not in ex.files]
    if remaining:
        pool: list[str] = [
            b.text
            for idx, b in enumerate(blocks)
            if idx not in used and b.text.strip() and b.lang not in JSON_LANGS
        ]
        if not blocks:
            raw = raw_region(text)
            if raw is not None:
                pool.append(raw)
                ex.notes.append("matched modules in unfenced text")
        stems = {path_stem(t).lower(): t for t in targets}
        for body in pool:
            declared = {u.lower() for u in units(body)}
            in_block = [stems[s] for s in declared if s in stems]
            hits = [t for t in remaining if t in in_block and t not in ex.files]
            if not hits:
                continue
            pieces = {hits[0]: body} if len(in_block) == 1 else split_units(body, in_block)
            for t in hits:
                if t in pieces:
                    ex.files[t] = with_newline(pieces[t])
                    if "module_match" not in methods:
                        methods.append("module_match")
    ex.method = "+".join(methods) if methods else "none"


def extract_files(response: str, targets: list[str]) -> Extraction:
    """Extract the text of each target file from a model's answer; never raises.

    ``targets`` are repository paths such as ``"rtl/lfsr_8bit.sv"``. ``files`` holds only
    targets; ``missing`` lists the targets that were not found.
    """
    ex = Extraction()
    try:
        tlist: list[str] = []
        for t in targets or []:
            if isinstance(t, str) and t not in tlist:
                tlist.append(t)
        ex.missing = list(tlist)
        text = _prepare(response if isinstance(response, str) else "", ex)
        blocks = find_fenced_blocks(text) or find_fenced_blocks_official(text)
        ex.blocks_found = len(blocks)
        if len(tlist) == 1:
            _extract_single(text, blocks, tlist[0], ex)
        elif tlist:
            _extract_multi(text, blocks, tlist, ex)
        ex.missing = [t for t in tlist if t not in ex.files]
        if not ex.files:
            ex.method = "none"
    except Exception as exc:  # a parser bug must not crash an evaluation run
        ex.notes.append(f"internal error: {type(exc).__name__}: {exc}")
        ex.missing = [t for t in ex.missing if t not in ex.files]
    return ex
