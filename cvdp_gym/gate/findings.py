"""What the answer gate found: each finding with its place, and the scan's summary."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Finding", "Scan"]


@dataclass(frozen=True)
class Finding:
    """One thing the answer reaches outside its design: where, and what (one line)."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


@dataclass
class Scan:
    """What :func:`scan` found: its findings, and the definitions the answer declares
    (modules, interfaces, programs, packages, primitives: a test bench's module of the same
    name changes the benchmark's own compilation)."""

    findings: list[Finding] = field(default_factory=list)
    definitions: frozenset[str] = frozenset()

    @property
    def reason(self) -> str:
        """The first finding, the verdict's one-line reason ("" when clean)."""
        return str(self.findings[0]) if self.findings else ""
