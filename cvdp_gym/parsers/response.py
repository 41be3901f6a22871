"""Extract the files a single-shot (non-agentic) CVDP answer must provide.

Compatible with the official CVDP tool, which takes the first fenced block for one target
(else the raw text) and a ``{"code": [{"<path>": "<text>"}]}`` JSON object for several,
but more forgiving: thinking and Harmony analysis are dropped, the right block is chosen
among several, files may be named next to their blocks, and blocks are matched to targets
by the module they declare. Nothing here raises on any input.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ._common import (
    FencedBlock,
    find_fenced_blocks,
    find_fenced_blocks_official,
    loads_lenient,
    strip_thinking,
)
from .harmony import final_text, is_harmony, parse_harmony

__all__ = ["HDL_LANGS", "Extraction", "extract_files"]

HDL_LANGS = frozenset(
    {"verilog", "systemverilog", "sv", "v", "vh", "svh", "system-verilog", "system_verilog"}
)
_HDL_EXTS = frozenset({".v", ".sv", ".vh", ".svh", ".vams", ".vlog"})
_LANGS_BY_EXT: dict[str, frozenset[str]] = {
    ".py": frozenset({"python", "py", "python3"}),
    ".json": frozenset({"json"}),
    ".md": frozenset({"markdown", "md"}),
    ".txt": frozenset({"text", "txt", "plaintext"}),
}
_JSON_LANGS = frozenset({"json", "jsonc", "json5"})

# A design-unit declaration (module, interface, ...) and its name.
_UNIT_RE = re.compile(
    r"^[ \t]*(?:virtual[ \t]+)?(?:module|macromodule|interface|program|package|class)\s+"
    r"(?:(?:static|automatic)\s+)?([A-Za-z_][\w$]*)",
    re.MULTILINE,
)
_UNIT_LINE_RE = re.compile(
    r"^[ \t]*(?:virtual[ \t]+)?(?:module|macromodule|interface|program|package|class)\s+"
    r"(?:(?:static|automatic)\s+)?([A-Za-z_][\w$]*)"
)
# A declaration in unfenced text must look like code, not prose ("module foo is ...").
_RAW_DECL_RE = re.compile(
    r"^[ \t]*(?:module|macromodule|interface|program|package)[ \t]+[A-Za-z_][\w$]*"
    r"[ \t]*(?:#|\(|;|$)"
)
_UNIT_END_RE = re.compile(r"\bend(?:module|interface|program|package|class)\b")
_DIRECTIVE_RE = re.compile(
    r"^[ \t]*`(?:timescale|include|define|undef|ifdef|ifndef|elsif|else|endif|default_nettype"
    r"|resetall|celldefine|endcelldefine)\b"
)
_SPECIAL_RE = re.compile(r"<\|[a-z_]+\|>")
_IMPORT_RE = re.compile(r"^[ \t]*import\s+[\w:*, \t]+;")


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
# Small helpers
# ----------------------------------------------------------------------------------------


def _norm_path(p: str) -> str:
    p = p.strip().strip("`'\"*").strip().replace("\\", "/")
    changed = True
    while changed:
        changed = False
        for prefix in ("/code/", "code/", "./", "/"):
            if p.startswith(prefix) and len(p) > len(prefix):
                p = p[len(prefix) :]
                changed = True
    return p


def _stem(target: str) -> str:
    base = posixpath.basename(_norm_path(target))
    return base.split(".", 1)[0] if "." in base else base


def _ext(target: str) -> str:
    return posixpath.splitext(_norm_path(target))[1].lower()


def _lang_ok(lang: str, target: str) -> bool:
    """Whether a block's label suits the target: unlabelled always does."""
    if not lang:
        return True
    ext = _ext(target)
    if ext in _HDL_EXTS:
        return lang in HDL_LANGS
    allowed = _LANGS_BY_EXT.get(ext)
    return True if allowed is None else lang in allowed


def _units(text: str) -> list[str]:
    return [m.group(1) for m in _UNIT_RE.finditer(text)]


def _with_newline(s: str) -> str:
    return s if not s or s.endswith("\n") else s + "\n"


def _mentioned_target(line: str, targets: list[str]) -> str | None:
    """The single target a line names (full path beats basename), or None if none/ambiguous."""
    scores: dict[str, int] = {}
    for t in targets:
        nt = _norm_path(t)
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
        base = posixpath.basename(_norm_path(win))
        if sum(1 for t in targets if posixpath.basename(_norm_path(t)) == base) > 1:
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
                foreign = fs.startswith(("#", "--")) and _ext(t) in _HDL_EXTS
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


def _raw_region(text: str) -> str | None:
    """From the first declaration (with the directives/comments just above it) to the last
    ``endmodule``-like line (with directives such as `` `endif`` just below it)."""
    lines = text.split("\n")
    first = next((i for i, ln in enumerate(lines) if _RAW_DECL_RE.match(ln)), None)
    if first is None:
        return None
    last = None
    for i in range(len(lines) - 1, first - 1, -1):
        if _UNIT_END_RE.search(lines[i]):
            last = i
            break
    if last is None:
        return None
    start = first
    i = first - 1
    while i >= 0:
        s = lines[i].strip()
        if not s or s.startswith("//") or _DIRECTIVE_RE.match(lines[i]) or _IMPORT_RE.match(s):
            start = i if s else start
            i -= 1
            continue
        if s.endswith("*/"):
            j = i
            while j >= 0 and "/*" not in lines[j]:
                j -= 1
            if j < 0:
                break
            start = j
            i = j - 1
            continue
        break
    end = last
    i = last + 1
    while i < len(lines):
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        if _DIRECTIVE_RE.match(lines[i]):
            end = i
            i += 1
            continue
        break
    return "\n".join(lines[start : end + 1]) + "\n"


def _split_units(text: str, targets: list[str]) -> dict[str, str]:
    """Split a block declaring several targets' modules into one piece per target.

    Helper modules that are not targets go with the next target's piece (or the last one),
    so nothing the design needs is dropped.
    """
    lines = text.split("\n")
    decls = [(i, m.group(1)) for i, ln in enumerate(lines) if (m := _UNIT_LINE_RE.match(ln))]
    if not decls:
        return {}
    by_stem = {_stem(t).lower(): t for t in targets}
    segments: list[tuple[str | None, list[str]]] = []
    seg_start = 0
    for k, (di, name) in enumerate(decls):
        next_decl = decls[k + 1][0] if k + 1 < len(decls) else len(lines)
        end = None
        for j in range(di, next_decl):
            if _UNIT_END_RE.search(lines[j]):
                end = j
                break
        if end is None:
            end = next_decl - 1
        if k + 1 == len(decls):
            end = len(lines) - 1
        segments.append((by_stem.get(name.lower()), lines[seg_start : end + 1]))
        seg_start = end + 1
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    last: str | None = None
    for tgt, seg in segments:
        if tgt is None or tgt in out:
            pending.extend(seg)
            continue
        out[tgt] = pending + seg
        pending = []
        last = tgt
    if pending and last is not None:
        out[last].extend(pending)
    return {t: _with_newline("\n".join(ls).strip("\n")) for t, ls in out.items()}


# ----------------------------------------------------------------------------------------
# JSON answers
# ----------------------------------------------------------------------------------------

_NAME_KEYS = ("name", "path", "file", "filename", "file_name")
_TEXT_KEYS = ("content", "code", "text", "contents", "source")


def _value_text(v: Any) -> str | None:
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        v = "\n".join(v)
    if not isinstance(v, str):
        return None
    if "```" in v:
        blocks = find_fenced_blocks(v) or find_fenced_blocks_official(v)
        if blocks:
            return blocks[0].text
    return v


def _code_mapping(obj: Any) -> dict[str, str]:
    out: dict[str, str] = {}

    def add(k: Any, v: Any) -> None:
        text = _value_text(v)
        if isinstance(k, str) and text is not None and k not in out:
            out[k] = text

    def add_item(item: Any) -> None:
        if not isinstance(item, dict):
            return
        name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
        body = next((item[k] for k in _TEXT_KEYS if k in item), None)
        if name is not None and body is not None:
            add(name, body)
            return
        for k, v in item.items():
            add(k, v)

    if isinstance(obj, list):
        for item in obj:
            add_item(item)
    elif isinstance(obj, dict):
        code = obj.get("code", obj.get("files"))
        if isinstance(code, list):
            for item in code:
                add_item(item)
        elif isinstance(code, dict):
            add_item(code)
        elif "code" not in obj and "files" not in obj:
            for k, v in obj.items():
                if isinstance(k, str) and ("/" in k or "." in k):
                    add(k, v)
    return out


def _match_keys(mapping: dict[str, str], targets: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    norm_keys = {k: _norm_path(k) for k in mapping}
    for t in targets:
        nt = _norm_path(t)
        hit = next((k for k, nk in norm_keys.items() if nk == nt), None)
        if hit is None:
            hit = next((k for k, nk in norm_keys.items() if nk.endswith("/" + nt)), None)
        if hit is None:
            base = posixpath.basename(nt)
            same_base = [x for x in targets if posixpath.basename(_norm_path(x)) == base]
            if len(same_base) == 1:
                hit = next(
                    (k for k, nk in norm_keys.items() if posixpath.basename(nk) == base), None
                )
        if hit is not None:
            out[t] = _with_newline(mapping[hit])
    return out


def _from_json(
    text: str, blocks: list[FencedBlock], targets: list[str]
) -> tuple[dict[str, str], int | None]:
    """Files from a JSON answer; also returns the index of the block holding the JSON."""
    candidates: list[tuple[int | None, str]] = []
    for idx, b in enumerate(blocks):
        if b.lang in _JSON_LANGS or b.text.lstrip().startswith("{"):
            candidates.append((idx, b.text))
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        candidates.append((None, stripped))
    lo, hi = text.find("{"), text.rfind("}")
    if 0 <= lo < hi:
        candidates.append((None, text[lo : hi + 1]))
    seen: set[str] = set()
    for idx, cand in candidates:
        if cand in seen or "{" not in cand:
            continue
        seen.add(cand)
        obj, err = loads_lenient(cand)
        if err is not None:
            continue
        files = _match_keys(_code_mapping(obj), targets)
        if files:
            return files, idx
    return {}, None


# ----------------------------------------------------------------------------------------
# Main entry point
# ----------------------------------------------------------------------------------------


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
    expected = _stem(target).lower()
    best: tuple[int, int] | None = None
    chosen: FencedBlock | None = None
    for idx, b in enumerate(blocks):
        if not b.text.strip() or not _lang_ok(b.lang, target):
            continue
        names = [u.lower() for u in _units(b.text)]
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
        ex.files[target] = _with_newline(chosen.text)
        ex.method = "fenced"
        if not chosen.closed:
            ex.notes.append("code fence not closed (output truncated?)")
        return
    files, _ = _from_json(text, blocks, [target])
    if files:
        ex.files.update(files)
        ex.method = "json"
        return
    usable = [b for b in blocks if b.text.strip() and b.lang not in _JSON_LANGS]
    expected = _stem(target).lower()
    for pred in (
        lambda b: expected in [u.lower() for u in _units(b.text)],
        lambda b: bool(_units(b.text)),
    ):
        hit = next((b for b in usable if pred(b)), None)
        if hit is not None:
            ex.files[target] = _with_newline(hit.text)
            ex.method = "fenced"
            ex.notes.append(f"used a block labelled {hit.lang!r}")
            return
    raw = _raw_region(_outside_blocks(text, blocks))
    if raw is not None:
        ex.files[target] = raw
        ex.method = "raw"
        return
    first = next((b for b in blocks if b.text.strip()), None)
    if first is not None:
        # The official tool's rule: the first block, whatever its label.
        ex.files[target] = _with_newline(first.text)
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
    files, json_idx = _from_json(text, blocks, targets)
    if files:
        ex.files.update(files)
        methods.append("json")
        if json_idx is not None:
            used.add(json_idx)
    for idx, b in enumerate(blocks):
        if idx in used or not b.text.strip() or b.lang in _JSON_LANGS:
            continue
        t, drop = _block_name(b, targets)
        if t is None:
            continue
        if t in ex.files:
            if "named_blocks" in methods:
                ex.notes.append(f"{t} named by several blocks; kept the first")
            continue
        body = _drop_first_nonempty_line(b.text) if drop else b.text
        ex.files[t] = _with_newline(body)
        used.add(idx)
        if "named_blocks" not in methods:
            methods.append("named_blocks")
    remaining = [t for t in targets if t not in ex.files]
    if remaining:
        pool: list[str] = [
            b.text
            for idx, b in enumerate(blocks)
            if idx not in used and b.text.strip() and b.lang not in _JSON_LANGS
        ]
        if not blocks:
            raw = _raw_region(text)
            if raw is not None:
                pool.append(raw)
                ex.notes.append("matched modules in unfenced text")
        stems = {_stem(t).lower(): t for t in targets}
        for body in pool:
            declared = {u.lower() for u in _units(body)}
            in_block = [stems[s] for s in declared if s in stems]
            hits = [t for t in remaining if t in in_block and t not in ex.files]
            if not hits:
                continue
            pieces = {hits[0]: body} if len(in_block) == 1 else _split_units(body, in_block)
            for t in hits:
                if t in pieces:
                    ex.files[t] = _with_newline(pieces[t])
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
