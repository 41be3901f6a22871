"""Where cvdp-gym keeps what it builds or fetches for a user: one folder, the XDG one.

``cache_dir()`` is ``$XDG_CACHE_HOME/cvdp-gym``, else ``~/.cache/cvdp-gym`` (an empty
``XDG_CACHE_HOME`` counts as unset, as the XDG spec says). The grade cache, mirrored
repositories and installed agents live under it, each with its own override variable.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """The user's cvdp-gym cache folder (not created)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cvdp-gym"
