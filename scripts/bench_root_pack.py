"""Time ``cvdp-gym toolchain pack`` and ``install --from`` for each compression on the real root.

    .venv/bin/python scripts/bench_root_pack.py [--compression gz xz none] [--work DIR]

Packs the installed simulation root (``cvdp-gym toolchain path``) once per compression,
installs each archive into a scratch folder (verifying it as ``install --from`` does), and
prints one row per compression: archive size, pack time, install time. The scratch folder
is removed afterwards. Numbers depend on the disk and the CPU: run it where the site packs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from cvdp_gym.toolchain import detect
from cvdp_gym.toolchain.pack import COMPRESSIONS, pack, unpack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compression", nargs="+", default=list(COMPRESSIONS), choices=list(COMPRESSIONS))
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a new one under the temp folder)")
    args = parser.parse_args()
    root = detect("root").root
    if root is None or detect("root").lock is None:
        raise SystemExit("no simulation root here: cvdp-gym toolchain install")
    size = sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(root) for f in files)
    work = Path(tempfile.mkdtemp(prefix="cvdp-pack-bench-", dir=args.work))
    print(f"root {root}: {size / 1e6:.0f} MB in regular files, {os.cpu_count()} CPUs")
    print(f"{'compression':<12} {'archive MB':>10} {'ratio':>6} {'pack s':>7} {'install s':>9}")
    try:
        for name in args.compression:
            archive = work / f"root.tar.{name}"
            result = pack(root, archive, compression=name, log=lambda _: None)
            started = time.monotonic()
            unpack(archive, work / f"unpacked-{name}", log=lambda _: None)
            installed = time.monotonic() - started
            print(f"{name:<12} {result.bytes / 1e6:>10.0f} {result.bytes / size:>6.2f} {result.seconds:>7.1f} {installed:>9.1f}", flush=True)
            shutil.rmtree(work / f"unpacked-{name}")
            archive.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
