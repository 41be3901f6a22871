"""Fetching a pinned file: the first of several URLs that answers with the pinned bytes."""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

from cvdp_gym.errors import RootBuildError


def download_pinned(urls: list[str], sha256: str, target: Path, what: str) -> str:
    """Write the first answer whose SHA-256 is ``sha256`` to ``target``; returns the URL used.

    ``what`` names the file in the error that lists every URL's failure.
    """
    failures = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                data = answer.read()
        except OSError as exc:
            failures.append(f"{url}: {exc}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            failures.append(f"{url}: SHA-256 {digest}, expected {sha256}")
            continue
        target.write_bytes(data)
        return url
    raise RootBuildError(f"could not fetch {what}:\n" + "\n".join(failures))
