"""An SQLite cache of grading results, keyed by content hash.

The key covers everything that can change a verdict: the harness files, the candidate's
files, the problem's context, the toolchain's versions and the grader's settings. SQLite in
WAL mode with a busy timeout lets several processes (vector environments, trainer workers)
read and write one file at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from cvdp_gym.user_dirs import cache_dir

SCHEMA_VERSION = 1


def default_cache_path() -> Path:
    return cache_dir() / "grades.sqlite"


def content_key(*parts: Any) -> str:
    """A stable hash of JSON-serialisable parts (dicts are hashed with sorted keys)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\x00")
    return digest.hexdigest()


class GradeCache:
    """``get(key)`` / ``put(key, value)`` of JSON values, safe across threads and processes."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._connect() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS grades (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
                "created REAL DEFAULT (julianday('now')))"
            )

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            self._local.pid = os.getpid()
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._connect().execute("SELECT value FROM grades WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._connect().execute(
            "INSERT OR REPLACE INTO grades (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM grades").fetchone()[0]
