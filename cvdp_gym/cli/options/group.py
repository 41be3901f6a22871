"""How a command shows one option group: which of its fields, with which defaults."""

from __future__ import annotations

from typing import Any


class Group:
    """Marks a command parameter (``Annotated[HarnessOptions, Group(...)]``) as an option
    group and says how this command shows it: ``only`` the fields named (the rest keep their
    dataclass defaults and have no flag), and ``defaults`` that differ from the dataclass's.
    A parameter annotated with a plain option-group dataclass shows every field as declared."""

    def __init__(self, *, only: tuple[str, ...] | None = None, **defaults: Any) -> None:
        self.only = only
        self.defaults = defaults

    def shows(self, name: str) -> bool:
        """Whether the field ``name`` gets a flag on this command."""
        return self.only is None or name in self.only
