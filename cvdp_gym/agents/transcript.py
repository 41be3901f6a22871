"""An agent's exchanges with its model, as the turns of an agentic transcript.

``cvdp-gym eval --agentic`` writes each episode's transcript with ``messages`` (the
conversation as last sent) and ``steps`` (one per model answer: the assistant's text, its
tool calls, the tool outputs that came back). A command-line agent's conversation is read
from what passed through the proxy, in whichever wire format the agent speaks: OpenAI chat
completions (plain or streamed), the Responses API (streamed events or a whole response), or
Anthropic messages. A tool's output is found in the request that follows the call (a
``tool`` message, a ``function_call_output`` item, a ``tool_result`` block); an agent that
reads commands from plain text (no tool calls) gets its observation as the next user
message, which becomes the turn's output.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["agent_steps"]


def _text(content: Any) -> str:
    """The text of a message's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                value = part.get("text", part.get("content", ""))
                parts.append(value if isinstance(value, str) else _text(value))
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return ""


def _chat_answer(exchange: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The assistant message of a chat-completions answer (streamed deltas joined)."""
    if isinstance(exchange.get("response"), dict):
        choice = (exchange["response"].get("choices") or [{}])[0]
        message = dict(choice.get("message") or {})
        return message, choice.get("finish_reason")
    content, reasoning, finish = [], [], None
    calls: dict[int, dict[str, Any]] = {}
    for event in (exchange.get("events") or []):
        if not isinstance(event, dict):
            continue
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", len(calls)), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    if any(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    return message, finish


def _responses_output(exchange: dict[str, Any]) -> list[dict[str, Any]]:
    """The output items of a Responses API answer (the completed event's, or the items done)."""
    if isinstance(exchange.get("response"), dict):
        return list(exchange["response"].get("output") or [])
    done: list[dict[str, Any]] = []
    for event in (exchange.get("events") or []):
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind in ("response.completed", "response.incomplete") and isinstance(event.get("response"), dict):
            output = event["response"].get("output")
            if output:
                return list(output)
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            done.append(event["item"])
    return done


def _anthropic_answer(exchange: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of an Anthropic messages answer (streamed blocks joined)."""
    if isinstance(exchange.get("response"), dict):
        return list(exchange["response"].get("content") or [])
    blocks: dict[int, dict[str, Any]] = {}
    for event in (exchange.get("events") or []):
        if not isinstance(event, dict):
            continue
        if event.get("type") == "content_block_start":
            blocks[event.get("index", len(blocks))] = dict(event.get("content_block") or {})
        elif event.get("type") == "content_block_delta":
            block, delta = blocks.setdefault(event.get("index", 0), {}), event.get("delta") or {}
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            if "partial_json" in delta:
                block["input_json"] = block.get("input_json", "") + delta["partial_json"]
    return [blocks[i] for i in sorted(blocks)]


def _turn(exchange: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]], str | None, str | None]:
    """(assistant message, tool calls as ``{id, name, arguments}``, reasoning, finish reason)."""
    path = str(exchange.get("path") or "").split("?")[0]
    if path.endswith("/responses"):
        items = _responses_output(exchange)
        text = "".join(_text(i.get("content")) for i in items if i.get("type") == "message")
        reasoning = "".join(_text(i.get("summary")) or _text(i.get("content")) for i in items if i.get("type") == "reasoning")
        calls = [
            {"id": i.get("call_id") or i.get("id") or "", "name": i.get("name") or i.get("type"), "arguments": i.get("arguments") or i.get("action") or i.get("input") or ""}
            for i in items if i.get("type") in ("function_call", "custom_tool_call", "local_shell_call")
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        return message, calls, reasoning or None, None
    if path.endswith("/messages"):
        blocks = _anthropic_answer(exchange)
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = [{"id": b.get("id", ""), "name": b.get("name", ""), "arguments": b.get("input") or b.get("input_json") or ""} for b in blocks if b.get("type") == "tool_use"]
        thinking = "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
        return {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}, calls, thinking or None, None
    message, finish = _chat_answer(exchange)
    message.setdefault("role", "assistant")
    message["content"] = _text(message.get("content"))
    calls = [
        {"id": c.get("id", ""), "name": (c.get("function") or {}).get("name", ""), "arguments": (c.get("function") or {}).get("arguments", "")}
        for c in message.get("tool_calls") or [] if isinstance(c, dict)
    ]
    return message, calls, message.pop("reasoning_content", None), finish


def _conversation(request: Any) -> list[Any]:
    """The conversation a request carries: chat ``messages``, Responses ``input`` items."""
    if not isinstance(request, dict):
        return []
    items = request.get("messages")
    if items is None:
        items = request.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items) if isinstance(items, list) else []


def _outputs(calls: list[dict[str, Any]], following: Any) -> list[dict[str, Any]]:
    """The tool outputs the next request sends back for ``calls`` (or, for an agent without
    tool calls, the user message that follows the turn)."""
    conversation = _conversation(following)
    ids = {c["id"] for c in calls if c.get("id")}
    found: list[dict[str, Any]] = []
    for item in conversation:
        if not isinstance(item, dict):
            continue
        if item.get("role") == "tool" and item.get("tool_call_id") in ids:
            found.append({"tool_call_id": item["tool_call_id"], "content": _text(item.get("content"))})
        elif item.get("type") in ("function_call_output", "custom_tool_call_output", "local_shell_call_output") and item.get("call_id") in ids:
            output = item.get("output")
            found.append({"tool_call_id": item["call_id"], "content": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)})
        elif item.get("role") == "user" and isinstance(item.get("content"), list):
            for block in item["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in ids:
                    found.append({"tool_call_id": block["tool_use_id"], "content": _text(block.get("content"))})
    if not found and not calls and conversation:
        last = conversation[-1]
        if isinstance(last, dict) and last.get("role") == "user":
            found.append({"content": _text(last.get("content"))})
    return found


def agent_steps(exchanges: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """``(steps, messages)`` of a transcript from an agent's exchanges (``Exchange.to_dict()``
    each): one step per model answer, and the conversation of the last request followed by
    the last answer."""
    answered = [
        e for e in exchanges
        if e.get("forwarded") and 0 < int(e.get("status") or 0) < 400 and isinstance(e.get("request"), dict)
    ]
    steps: list[dict[str, Any]] = []
    for index, exchange in enumerate(answered):
        message, calls, reasoning, finish = _turn(exchange)
        following = answered[index + 1]["request"] if index + 1 < len(answered) else None
        steps.append({
            "turn": index + 1,
            "assistant": message,
            "reasoning": reasoning,
            "finish_reason": finish,
            "tool_calls": calls,
            "outputs": _outputs(calls, following) if following is not None else [],
            "format": str(exchange.get("path") or "").split("?")[0].rsplit("/", 1)[-1],
            "cwd": None,
            "request_s": round(float(exchange.get("seconds") or 0), 3),
            "step_s": None,
            "tokens": {"prompt": exchange.get("prompt_tokens", 0), "completion": exchange.get("completion_tokens", 0)},
        })
    messages: list[Any] = []
    if answered:
        messages = [*_conversation(answered[-1]["request"]), steps[-1]["assistant"]]
    return steps, messages
