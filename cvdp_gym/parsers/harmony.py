"""Text-level parser and renderer for OpenAI Harmony (gpt-oss) output.

Works on decoded text that still contains the special tokens, because that is what a
sampling server returns when asked not to skip them; no tokenizer or ``openai-harmony``
package is needed. The parser is tolerant: the leading ``<|start|>assistant`` may be
missing (the prompt ended with it), the recipient may sit before or after the channel,
the content type may be ``<|constrain|>json`` or a bare ``json``, and the last message
may have no terminator (generation stopped, or the server stripped the stop token).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

__all__ = [
    "CALL",
    "CHANNEL",
    "CONSTRAIN",
    "END",
    "MESSAGE",
    "RETURN",
    "START",
    "HarmonyMessage",
    "final_text",
    "is_harmony",
    "parse_harmony",
    "render_message",
    "render_tool_call",
    "render_tool_result",
]

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
CALL = "<|call|>"
RETURN = "<|return|>"
TERMINATORS = (END, CALL, RETURN)

KNOWN_ROLES = frozenset({"assistant", "user", "system", "developer", "tool"})

# Where a message's content stops: a terminator, or the header of the next message when
# the model forgot the terminator.
_STOP_RE = re.compile(r"<\|(?:end|call|return|start|channel)\|>")
_BOUNDARY_RE = re.compile(r"<\|(?:end|call|return|start)\|>")
_CONSTRAIN_RE = re.compile(r"<\|constrain\|>\s*([^\s<]*)")
_SPECIAL_RE = re.compile(r"<\|[a-z_]+\|>")
_JSON_DECODER = json.JSONDecoder(strict=False)


@dataclass
class HarmonyMessage:
    """One Harmony message. ``terminator`` is None when the text stopped without one."""

    role: str
    channel: str | None
    recipient: str | None
    content_type: str | None
    content: str
    terminator: str | None = None
    start: int = field(default=-1, compare=False, repr=False)  # offset of the header
    end: int = field(default=-1, compare=False, repr=False)  # offset past the terminator


def is_harmony(text: str) -> bool:
    """True when the text carries Harmony structure (a channel or message marker)."""
    return isinstance(text, str) and (CHANNEL in text or MESSAGE in text)


def _parse_header(header: str, had_start: bool) -> tuple[str, str | None, str | None, str | None]:
    ctype: str | None = None
    m = _CONSTRAIN_RE.search(header)
    if m:
        ctype = m.group(1) or None
        header = header[: m.start()] + " " + header[m.end() :]
    ci = header.find(CHANNEL)
    if ci >= 0:
        pre, post = header[:ci], header[ci + len(CHANNEL) :]
    else:
        pre, post = header, ""
    pre_words = _SPECIAL_RE.sub(" ", pre).split()
    post_words = _SPECIAL_RE.sub(" ", post).split()
    role = "assistant"
    rest = pre_words
    if pre_words and not pre_words[0].startswith("to="):
        first = pre_words[0]
        if had_start or first in KNOWN_ROLES or first.startswith("functions."):
            role = first
            rest = pre_words[1:]
    recipient: str | None = None
    for w in rest + post_words:
        if w.startswith("to=") and len(w) > 3:
            recipient = w[3:]
            break
    channel: str | None = None
    for w in post_words:
        if w.startswith("to="):
            continue
        if channel is None:
            channel = w
        elif ctype is None:
            ctype = w
    return role, channel, recipient, ctype


def _content_end(text: str, cstart: int, json_hint: bool) -> tuple[int, str | None, int]:
    """Return (content_end, terminator, next_pos).

    With a JSON hint, a JSON value at the start of the content is decoded first so that
    strings inside it may contain marker-like text such as ``<|call|>``.
    """
    n = len(text)
    if json_hint:
        j = cstart
        while j < n and text[j] in " \t\r\n":
            j += 1
        if j < n and text[j] in "{[":
            try:
                _, e = _JSON_DECODER.raw_decode(text, j)
            except (ValueError, RecursionError):
                e = -1
            if e > 0:
                k = e
                while k < n and text[k] in " \t\r\n":
                    k += 1
                if k >= n:
                    return n, None, n
                m = _STOP_RE.match(text, k)
                if m:
                    return _after_stop(k, m.group(0))
    m = _STOP_RE.search(text, cstart)
    if not m:
        return n, None, n
    return _after_stop(m.start(), m.group(0))


def _after_stop(k: int, tok: str) -> tuple[int, str | None, int]:
    if tok in TERMINATORS:
        return k, tok, k + len(tok)
    return k, None, k


def parse_harmony(text: str) -> list[HarmonyMessage]:
    """Parse Harmony-formatted text into messages; never raises.

    Text before the first header and text that is not inside any message are ignored.
    """
    msgs: list[HarmonyMessage] = []
    if not isinstance(text, str):
        return msgs
    pos = 0
    while True:
        mi = text.find(MESSAGE, pos)
        if mi < 0:
            break
        # The header begins after the last <|start|> or terminator before <|message|>.
        hstart = pos
        span_start = pos
        had_start = False
        for bm in _BOUNDARY_RE.finditer(text, pos, mi):
            had_start = bm.group(0) == START
            span_start = bm.start() if had_start else bm.end()
            hstart = bm.end()
        header = text[hstart:mi]
        role, channel, recipient, ctype = _parse_header(header, had_start)
        cstart = mi + len(MESSAGE)
        json_hint = recipient is not None or (ctype is not None and "json" in ctype.lower())
        cend, term, nxt = _content_end(text, cstart, json_hint)
        msgs.append(
            HarmonyMessage(
                role=role,
                channel=channel,
                recipient=recipient,
                content_type=ctype,
                content=text[cstart:cend],
                terminator=term,
                start=span_start,
                end=nxt,
            )
        )
        pos = nxt
    return msgs


def final_text(text: str) -> str | None:
    """Content of the last final-channel message, or None when there is none."""
    for msg in reversed(parse_harmony(text)):
        if msg.channel == "final":
            return msg.content
    return None


def _name_recipient(name: str) -> str:
    return name if "." in name else f"functions.{name}"


def render_tool_result(output: str, name: str = "execute_bash") -> str:
    """A tool's output as the Harmony tool message the model expects to read next."""
    return f"{START}{_name_recipient(name)} to=assistant{CHANNEL}commentary{MESSAGE}{output}{END}"


def render_tool_call(name: str, arguments_json: str, with_start: bool = False) -> str:
    """A tool call exactly as gpt-oss emits it after a prompt ending in ``<|start|>assistant``.

    ``with_start`` prepends ``<|start|>assistant`` for use inside a longer transcript.
    """
    head = f"{START}assistant" if with_start else ""
    return (
        f"{head}{CHANNEL}commentary to={_name_recipient(name)} {CONSTRAIN}json"
        f"{MESSAGE}{arguments_json}{CALL}"
    )


def render_message(msg: HarmonyMessage) -> str:
    """Render a message the way the Harmony library does: an assistant's recipient goes
    after the channel, any other role's recipient goes after the role."""
    role_part = msg.role
    chan_part = ""
    if msg.recipient and msg.role != "assistant":
        role_part += f" to={msg.recipient}"
    if msg.channel:
        chan_part = f"{CHANNEL}{msg.channel}"
    if msg.recipient and msg.role == "assistant":
        chan_part += f" to={msg.recipient}"
    if msg.content_type:
        chan_part += f" {CONSTRAIN}{msg.content_type}"
    term = msg.terminator if msg.terminator is not None else END
    return f"{START}{role_part}{chan_part}{MESSAGE}{msg.content}{term}"
