"""Backends: the Tinker service, or an in-process implementation of its interfaces.

``saved_state`` tells a saved training state from a base model (and finds either's
tokenizer); ``service`` makes the configured backend's ``ServiceClient``.
"""

from __future__ import annotations

from rtl_trainer.backends.base import STATE_FILE
from rtl_trainer.backends.saved_state import is_saved_state, load_tokenizer
from rtl_trainer.backends.service import make_service

__all__ = ["STATE_FILE", "is_saved_state", "load_tokenizer", "make_service"]
