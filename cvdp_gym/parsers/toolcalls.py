"""Tool-call parsers and formatters for a bash-tool agent.

Supported formats: ``qwen`` (Hermes-style JSON in ``<tool_call>`` tags), ``qwen3_coder``
(XML-ish ``<function=...><parameter=...>``), ``harmony`` (gpt-oss) and a ``bash`` fallback
(a fenced shell block). Parsing is lenient and never raises on any text; every malformed
call yields an error message a model can act on, so an environment can feed it back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._common import find_fenced_blocks, loads_lenient, strip_thinking_leading
from .harmony import parse_harmony, render_tool_call, render_tool_result

__all__ = [
    "EXECUTE_BASH_TOOL",
    "FINISH_NAMES",
    "FINISH_TOOL",
    "FORMATS",
    "TOOLS",
    "ParsedTurn",
    "ToolCall",
    "format_tool_call",
    "format_tool_response",
    "parse_assistant_message",
    "parse_tool_calls",
]

FORMATS = ("auto", "qwen", "qwen3_coder", "harmony", "bash")
_FORMAT_ALIASES = {
    "hermes": "qwen",
    "qwen25": "qwen",
    "qwen2.5": "qwen",
    "qwen3coder": "qwen3_coder",
    "qwen3-coder": "qwen3_coder",
    "gpt-oss": "harmony",
    "gpt_oss": "harmony",
}
FINISH_NAMES = frozenset({"finish", "submit"})
BASH_LANGS = frozenset({"bash", "sh", "shell", "zsh"})

EXECUTE_BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "execute_bash",
        "description": (
            "Run a bash command in the task's working directory and return its combined "
            "stdout and stderr and exit code. Use it to inspect files, edit them (e.g. with "
            "cat <<'EOF' > file or sed), and run simulators or tests."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command to run; may span several lines.",
                }
            },
            "required": ["command"],
        },
    },
}

FINISH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "finish",
        "description": (
            "Call when the task is complete and the files in the working directory are "
            "final. Ends the episode; no further commands run."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "Optional short summary of what was done.",
                }
            },
            "required": [],
        },
    },
}

TOOLS: list[dict[str, Any]] = [EXECUTE_BASH_TOOL, FINISH_TOOL]

_TOOL_CALL_OPEN = "<tool_call>"
_TOOL_CALL_CLOSE = "</tool_call>"
_FUNCTION_OPEN = "<function="
_FUNCTION_CLOSE = "</function>"
_PARAM_OPEN = "<parameter="
_PARAM_CLOSE = "</parameter>"
_HARMONY_MARKERS = ("<|channel|>", "<|message|>", "<|start|>")
_TAG_MARKERS = (_TOOL_CALL_OPEN, _FUNCTION_OPEN)
_CALL_MARKERS = (*_HARMONY_MARKERS, *_TAG_MARKERS, "```")
_FUNC_RE = re.compile(r"<function=([^>\n]*)>")
_PARAM_RE = re.compile(r"<parameter=([^>\n]*)>")
_JSON_DECODER = json.JSONDecoder(strict=False)
_QWEN_SHAPE = 'expected {"name": ..., "arguments": {...}}'
_XML_SHAPE = "expected <function=NAME><parameter=KEY>VALUE</parameter></function>"
_HARMONY_SHAPE = 'expected a JSON object of arguments, e.g. {"command": "ls"}'


@dataclass
class ToolCall:
    """One tool call: ``raw`` is the exact text span the model wrote for it."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw: str = ""

    @property
    def is_finish(self) -> bool:
        """True for the finish tool (``finish`` or ``submit``)."""
        return self.name in FINISH_NAMES

    @property
    def command(self) -> str | None:
        """The ``command`` argument when it is a string (the bash tool's input)."""
        cmd = self.arguments.get("command")
        return cmd if isinstance(cmd, str) else None


@dataclass
class ParsedTurn:
    """A parsed assistant turn: calls, errors for malformed calls, and the prose around them.

    ``reasoning`` holds thinking / Harmony analysis text, kept apart from ``content``.
    """

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    content: str = ""
    format: str = "none"
    reasoning: str = ""


def _normalize_format(fmt: str) -> str:
    f = fmt.strip().lower() if isinstance(fmt, str) else ""
    f = _FORMAT_ALIASES.get(f, f)
    if f not in FORMATS:
        raise ValueError(f"unknown tool-call format {fmt!r}; expected one of {FORMATS}")
    return f


def _strip_ns(name: str) -> str:
    name = name.strip()
    return name[len("functions.") :] if name.startswith("functions.") else name


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


# ----------------------------------------------------------------------------------------
# qwen (JSON in <tool_call>)
# ----------------------------------------------------------------------------------------

_Result = tuple[ToolCall | None, str | None]


def _call_from_obj(obj: Any, raw: str) -> list[_Result]:
    if isinstance(obj, list):
        if not obj:
            return [(None, f"empty list of calls; {_QWEN_SHAPE}")]
        out: list[_Result] = []
        for item in obj:
            out.extend(_call_from_obj(item, raw) if isinstance(item, dict) else [_not_obj(item)])
        return out
    if not isinstance(obj, dict):
        return [_not_obj(obj)]
    if "name" not in obj and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return [(None, f'missing "name" (the tool to call); {_QWEN_SHAPE}')]
    args: Any = None
    for key in ("arguments", "args", "parameters", "input"):
        if key in obj:
            args = obj[key]
            break
    if args is None:
        args = {}
    if isinstance(args, str):
        if not args.strip():
            args = {}
        else:
            parsed, err = loads_lenient(args)
            if err is not None:
                return [(None, f'"arguments" is a string but not valid JSON: {err}; {_QWEN_SHAPE}')]
            args = parsed
    if not isinstance(args, dict):
        kind = type(args).__name__
        return [(None, f'"arguments" must be a JSON object, got {kind}; {_QWEN_SHAPE}')]
    return [(ToolCall(_strip_ns(name), args, raw), None)]


def _not_obj(obj: Any) -> _Result:
    return (None, f"expected a JSON object, got {type(obj).__name__}; {_QWEN_SHAPE}")


def _parse_json_block(text: str, tag_start: int, k: int) -> tuple[list[_Result], int]:
    """Parse the JSON after ``<tool_call>`` at ``k``; return results and the end offset."""
    n = len(text)
    if k < n and text[k] in "{[":
        try:
            obj, e = _JSON_DECODER.raw_decode(text, k)
        except (ValueError, RecursionError):
            obj, e = None, -1
        if e > 0:
            m = _skip_ws(text, e)
            if text.startswith(_TOOL_CALL_CLOSE, m):
                end = m + len(_TOOL_CALL_CLOSE)
            elif m >= n:
                end = n
            else:
                c = text.find(_TOOL_CALL_CLOSE, m)
                nxt = text.find(_TOOL_CALL_OPEN, m)
                end = c + len(_TOOL_CALL_CLOSE) if c >= 0 and (nxt < 0 or c < nxt) else e
            return _call_from_obj(obj, text[tag_start:end]), end
    c = text.find(_TOOL_CALL_CLOSE, k)
    nxt = text.find(_TOOL_CALL_OPEN, k)
    truncated = c < 0
    if c >= 0 and (nxt < 0 or c < nxt):
        body_end, end = c, c + len(_TOOL_CALL_CLOSE)
    else:
        body_end = nxt if nxt >= 0 else n
        end = body_end
        truncated = True
    body = text[k:body_end].strip()
    raw = text[tag_start:end]
    if not body:
        why = " (the output ended?)" if truncated and end >= n else ""
        return [(None, f"empty tool call{why}; {_QWEN_SHAPE}")], end
    obj, err = loads_lenient(body)
    if err is not None and "{" in body and not body.startswith(("{", "[")):
        lo, hi = body.find("{"), body.rfind("}")
        if lo < hi:
            obj2, err2 = loads_lenient(body[lo : hi + 1])
            if err2 is None:
                obj, err = obj2, None
    if err is not None:
        hint = "; the call looks cut off (no closing </tool_call>)" if truncated else ""
        return [(None, f"invalid JSON: {err}{hint}; {_QWEN_SHAPE}")], end
    return _call_from_obj(obj, raw), end


# ----------------------------------------------------------------------------------------
# qwen3_coder (<function=...><parameter=...>)
# ----------------------------------------------------------------------------------------


def _earliest(text: str, needles: tuple[str, ...], start: int) -> int:
    found = [p for p in (text.find(nd, start) for nd in needles) if p >= 0]
    return min(found) if found else -1


def _parse_function(text: str, pos: int) -> tuple[_Result, int]:
    """Parse one ``<function=NAME>...</function>`` starting at ``pos``."""
    n = len(text)
    m = _FUNC_RE.match(text, pos)
    if m is None:
        return (None, f"malformed <function=...> tag; {_XML_SHAPE}"), pos + len(_FUNCTION_OPEN)
    name = _strip_ns(m.group(1))
    args: dict[str, Any] = {}
    p = m.end()
    while True:
        p = _skip_ws(text, p)
        if text.startswith(_PARAM_OPEN, p):
            pm = _PARAM_RE.match(text, p)
            if pm is None:
                return (None, f"malformed <parameter=...> tag; {_XML_SHAPE}"), _resync(text, p)
            key = pm.group(1).strip()
            vs = pm.end()
            ce = text.find(_PARAM_CLOSE, vs)
            if ce >= 0:
                nxt = ce + len(_PARAM_CLOSE)
            else:
                ce = _earliest(text, (_PARAM_OPEN, _FUNCTION_CLOSE, _TOOL_CALL_CLOSE), vs)
                ce = n if ce < 0 else ce
                nxt = ce
            val = text[vs:ce]
            if val.startswith("\n"):
                val = val[1:]
            if val.endswith("\n"):
                val = val[:-1]
            args[key] = val
            p = nxt
        elif text.startswith(_FUNCTION_CLOSE, p):
            p += len(_FUNCTION_CLOSE)
            break
        elif p >= n or text.startswith((_TOOL_CALL_CLOSE, _FUNCTION_OPEN, _TOOL_CALL_OPEN), p):
            break
        else:  # stray text inside the function: skip to the next tag
            q = _earliest(text, (_PARAM_OPEN, _FUNCTION_CLOSE, _TOOL_CALL_CLOSE), p)
            if q < 0:
                p = n
                break
            p = q
    if not name:
        return (None, f"missing function name in <function=...>; {_XML_SHAPE}"), p
    return (ToolCall(name, args, ""), None), p


def _resync(text: str, p: int) -> int:
    q = _earliest(text, (_FUNCTION_CLOSE, _TOOL_CALL_CLOSE), p)
    if q < 0:
        return len(text)
    if text.startswith(_FUNCTION_CLOSE, q):
        return q + len(_FUNCTION_CLOSE)
    return q


def _parse_xml_block(text: str, tag_start: int, k: int, wrapped: bool) -> tuple[list[_Result], int]:
    """Parse the functions inside one ``<tool_call>`` (or one bare ``<function=``)."""
    results: list[_Result] = []
    n = len(text)
    pos = k
    while True:
        pos = _skip_ws(text, pos)
        if text.startswith(_FUNCTION_OPEN, pos):
            (call, err), pos = _parse_function(text, pos)
            results.append((call, err))
            if not wrapped:
                break
            continue
        if wrapped and text.startswith(_TOOL_CALL_CLOSE, pos):
            pos += len(_TOOL_CALL_CLOSE)
        break
    if not results and pos < n and wrapped:
        results.append((None, f"no <function=...> after <tool_call>; {_XML_SHAPE}"))
    out: list[_Result] = []
    raw = text[tag_start:pos]
    for call, err in results:
        if call is not None:
            call = ToolCall(call.name, call.arguments, raw)
        out.append((call, err))
    return out, pos


# ----------------------------------------------------------------------------------------
# Format drivers
# ----------------------------------------------------------------------------------------


def _parse_tagged(text: str, fmt: str) -> ParsedTurn:
    calls: list[ToolCall] = []
    errors: list[str] = []
    outside: list[str] = []
    saw_xml = False
    count = 0
    pos = 0
    n = len(text)
    while pos < n:
        i = text.find(_TOOL_CALL_OPEN, pos)
        j = text.find(_FUNCTION_OPEN, pos)
        if i < 0 and j < 0:
            break
        if i >= 0 and (j < 0 or i <= j):
            outside.append(text[pos:i])
            k = _skip_ws(text, i + len(_TOOL_CALL_OPEN))
            if text.startswith(_FUNCTION_OPEN, k):
                saw_xml = True
                results, end = _parse_xml_block(text, i, k, wrapped=True)
            elif text.startswith(_TOOL_CALL_CLOSE, k):
                results, end = (
                    [(None, f"empty tool call; {_QWEN_SHAPE}")],
                    k + len(_TOOL_CALL_CLOSE),
                )
            else:
                results, end = _parse_json_block(text, i, k)
            start = i
        else:
            outside.append(text[pos:j])
            saw_xml = True
            results, end = _parse_xml_block(text, j, j, wrapped=False)
            start = j
        for call, err in results:
            count += 1
            if call is not None:
                calls.append(call)
            else:
                errors.append(f"tool call {count}: {err}")
        pos = max(end, start + 1)
    outside.append(text[pos:])
    content = "".join(outside).replace(_TOOL_CALL_CLOSE, "").strip()
    if fmt == "auto":
        fmt = "qwen3_coder" if saw_xml else "qwen"
    return ParsedTurn(calls=calls, errors=errors, content=content, format=fmt)


_SPECIAL_RE = re.compile(r"<\|[a-z_]+\|>")
_BLANK_RUN_RE = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")  # blank lines left where calls were cut out


def _parse_harmony_turn(text: str) -> ParsedTurn:
    msgs = parse_harmony(text)
    calls: list[ToolCall] = []
    errors: list[str] = []
    count = 0
    for m in msgs:
        if m.role != "assistant" or not m.recipient:
            continue
        if m.recipient in ("assistant", "user", "all", "system", "developer"):
            continue
        count += 1
        raw = text[m.start : m.end]
        body = m.content.strip()
        args: Any = {}
        if body:
            args, err = loads_lenient(body)
            if err is not None:
                cut = (
                    "; the message ended without <|call|> (cut off?)"
                    if m.terminator is None
                    else ""
                )
                errors.append(
                    f"tool call {count} (to={m.recipient}): invalid JSON: {err}{cut}; "
                    f"{_HARMONY_SHAPE}"
                )
                continue
            if not isinstance(args, dict):
                errors.append(
                    f"tool call {count} (to={m.recipient}): arguments must be a JSON object, "
                    f"got {type(args).__name__}; {_HARMONY_SHAPE}"
                )
                continue
        calls.append(ToolCall(_strip_ns(m.recipient), args, raw))
    finals = [m.content for m in msgs if m.channel == "final" and m.role == "assistant"]
    if finals:
        content = finals[-1].strip()
    else:
        plain = [
            m.content
            for m in msgs
            if m.role == "assistant" and not m.recipient and m.channel != "analysis"
        ]
        content = "\n".join(p.strip() for p in plain if p.strip())
        if not content:
            outside: list[str] = []
            pos = 0
            for m in msgs:
                outside.append(text[pos : max(pos, m.start)])
                pos = max(pos, m.end)
            outside.append(text[pos:])
            content = _SPECIAL_RE.sub("", "".join(outside)).strip()
    reasoning = "\n".join(m.content.strip() for m in msgs if m.channel == "analysis")
    return ParsedTurn(
        calls=calls, errors=errors, content=content, format="harmony", reasoning=reasoning
    )


def _parse_bash(text: str, label: str) -> ParsedTurn:
    for b in find_fenced_blocks(text):
        if b.lang in BASH_LANGS and b.text.strip():
            call = ToolCall("execute_bash", {"command": b.text}, text[b.start : b.end])
            content = (text[: b.start] + text[b.end :]).strip()
            return ParsedTurn(calls=[call], content=content, format="bash")
    return ParsedTurn(content=text.strip(), format=label)


def _first_marker_kind(text: str) -> str | None:
    best: tuple[int, str] | None = None
    for kind, markers in (("harmony", _HARMONY_MARKERS), ("tagged", _TAG_MARKERS)):
        for mk in markers:
            p = text.find(mk)
            if p >= 0 and (best is None or p < best[0]):
                best = (p, kind)
    return best[1] if best else None


def _parse(text: str, fmt: str) -> ParsedTurn:
    if fmt == "harmony":
        return _parse_harmony_turn(text)
    rest, reasoning, _ = strip_thinking_leading(text, _CALL_MARKERS)
    if fmt in ("qwen", "qwen3_coder"):
        turn = _parse_tagged(rest, fmt)
    elif fmt == "bash":
        turn = _parse_bash(rest, "bash")
    else:
        kind = _first_marker_kind(rest)
        if kind == "harmony":
            return _parse_harmony_turn(text)
        turn = _parse_tagged(rest, "auto") if kind == "tagged" else ParsedTurn()
        if not turn.calls and not turn.errors:
            turn = _parse_bash(rest, "none")
    turn.reasoning = reasoning
    turn.content = _BLANK_RUN_RE.sub("\n\n", turn.content)
    return turn


def parse_tool_calls(text: str, fmt: str = "auto") -> ParsedTurn:
    """Parse the tool calls in one assistant turn; never raises for any text.

    ``fmt`` is one of :data:`FORMATS` (a ``ValueError`` for anything else is the only
    exception, as it is a programming error). In ``auto`` the earliest marker decides:
    Harmony tokens, ``<tool_call>``/``<function=``, else a fenced bash block.
    """
    f = _normalize_format(fmt)
    if not isinstance(text, str):
        text = ""
    try:
        return _parse(text, f)
    except Exception as exc:  # a parser bug must not kill a rollout
        return ParsedTurn(
            errors=[f"could not parse the reply ({type(exc).__name__}); {_QWEN_SHAPE}"],
            content=text.strip(),
            format=f,
        )


# ----------------------------------------------------------------------------------------
# Formatters
# ----------------------------------------------------------------------------------------


def _xml_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def format_tool_call(call: ToolCall, fmt: str) -> str:
    """The exact text a model using ``fmt`` emits for ``call`` (chat-template rendering).

    Harmony output starts at ``<|channel|>`` because gpt-oss prompts end with
    ``<|start|>assistant``. ``bash`` renders only the ``command`` argument.
    """
    f = _normalize_format(fmt)
    if f in ("auto", "qwen"):
        payload = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        return f"{_TOOL_CALL_OPEN}\n{payload}\n{_TOOL_CALL_CLOSE}"
    if f == "qwen3_coder":
        params = "".join(
            f"{_PARAM_OPEN}{k}>\n{_xml_value(v)}\n{_PARAM_CLOSE}\n"
            for k, v in call.arguments.items()
        )
        head = f"{_TOOL_CALL_OPEN}\n{_FUNCTION_OPEN}{call.name}>\n"
        return f"{head}{params}{_FUNCTION_CLOSE}\n{_TOOL_CALL_CLOSE}"
    if f == "harmony":
        return render_tool_call(call.name, json.dumps(call.arguments, ensure_ascii=False))
    cmd = call.arguments.get("command", "")
    return f"```bash\n{cmd if isinstance(cmd, str) else _xml_value(cmd)}\n```"


def format_tool_response(output: str, fmt: str, name: str = "execute_bash") -> str:
    """A tool's output as the model expects to read it back in ``fmt``.

    qwen / qwen3_coder: ``<tool_response>`` tags (the chat template's rendering, placed in
    a user turn); harmony: a tool message; bash: the output in a plain fenced block.
    """
    f = _normalize_format(fmt)
    if f == "harmony":
        return render_tool_result(output, name)
    if f == "bash":
        return f"Output:\n```\n{output}\n```"
    return f"<tool_response>\n{output}\n</tool_response>"


def parse_assistant_message(message: Mapping[str, Any]) -> tuple[ParsedTurn, list[str]]:
    """A chat message with OpenAI-style ``tool_calls`` as a parsed turn (format ``native``),
    and the ids of its calls in the order their tool messages come back: malformed calls
    first (arguments that are not a JSON object, no function name), then the others."""
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    parsed = ParsedTurn(
        content=content.strip() if isinstance(content, str) else "",
        format="native",
        reasoning=reasoning if isinstance(reasoning, str) else "",
    )
    error_ids: list[str] = []
    call_ids: list[str] = []
    entries = message.get("tool_calls") or []
    for number, entry in enumerate(entries if isinstance(entries, list) else [entries], start=1):
        function = entry.get("function") if isinstance(entry, Mapping) else None
        call_id = entry.get("id") if isinstance(entry, Mapping) else None
        call_id = call_id if isinstance(call_id, str) else ""
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name.strip():
            parsed.errors.append(f"tool call {number} has no function name")
            error_ids.append(call_id)
            continue
        arguments = function.get("arguments")  # type: ignore[union-attr]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                parsed.errors.append(f"the arguments of {name} are not valid JSON ({exc})")
                error_ids.append(call_id)
                continue
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            parsed.errors.append(f"the arguments of {name} must be a JSON object, got {type(arguments).__name__}")
            error_ids.append(call_id)
            continue
        parsed.calls.append(ToolCall(name.strip(), arguments, raw=json.dumps(entry, ensure_ascii=False, default=str)))
        call_ids.append(call_id)
    return parsed, error_ids + call_ids
