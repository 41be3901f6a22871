"""Parsers for model output: Harmony text, single-shot code answers and agent tool calls.

Pure standard library, and total: every entry point accepts arbitrary text without raising,
because it runs on whatever a model produced.
"""

from __future__ import annotations

from .harmony import (
    HarmonyMessage,
    final_text,
    is_harmony,
    parse_harmony,
    render_message,
    render_tool_call,
    render_tool_result,
)
from .response import Extraction, extract_files
from .toolcalls import (
    EXECUTE_BASH_TOOL,
    FINISH_NAMES,
    FINISH_TOOL,
    FORMATS,
    TOOLS,
    ParsedTurn,
    ToolCall,
    format_tool_call,
    format_tool_response,
    parse_assistant_message,
    parse_tool_calls,
)

__all__ = [
    "EXECUTE_BASH_TOOL",
    "FINISH_NAMES",
    "FINISH_TOOL",
    "FORMATS",
    "TOOLS",
    "Extraction",
    "HarmonyMessage",
    "ParsedTurn",
    "ToolCall",
    "extract_files",
    "final_text",
    "format_tool_call",
    "format_tool_response",
    "is_harmony",
    "parse_assistant_message",
    "parse_harmony",
    "parse_tool_calls",
    "render_message",
    "render_tool_call",
    "render_tool_result",
]
