"""Rendering: chat messages to model tokens and sampled tokens back to environment text.

``offline_tokenizer`` builds real Qwen tokenizers without the Hub; ``get_renderer`` picks
the renderer for a model family (Qwen3, Qwen3-2507 Instruct, Qwen3-Coder / Qwen3.5, gpt-oss).
"""

from __future__ import annotations

from .renderers import (
    FAMILIES,
    GenericRenderer,
    GptOssRenderer,
    Qwen3CoderRenderer,
    Qwen3InstructRenderer,
    Qwen3Renderer,
    Renderer,
    extends,
    get_renderer,
    renderer_family,
)
from .tokenizers import OFFLINE_TOKENIZERS, cache_dir, offline_tokenizer

__all__ = [
    "FAMILIES",
    "OFFLINE_TOKENIZERS",
    "GenericRenderer",
    "GptOssRenderer",
    "Qwen3CoderRenderer",
    "Qwen3InstructRenderer",
    "Qwen3Renderer",
    "Renderer",
    "cache_dir",
    "extends",
    "get_renderer",
    "offline_tokenizer",
    "renderer_family",
]
