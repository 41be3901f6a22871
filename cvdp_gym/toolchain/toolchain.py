"""What a toolchain is: its tools with their versions, the simulators a problem can name,
and what each simulator needs (binds, versions, the fingerprint in every cache key)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from cvdp_gym.toolchain import icarus12
from cvdp_gym.toolchain.envs import SimEnv
from cvdp_gym.toolchain.root import lock_fingerprint, runtime_cache_env

#: The simulators a problem can name (``Problem.toolchain``): the root as the official CVDP
#: image (Icarus 13, Verilator 5.038, Yosys 0.40), and Icarus 12 (VerilogEval's).
CVDP_SIM, ICARUS12 = "cvdp-sim", "icarus12"
SIMULATORS = (CVDP_SIM, ICARUS12)
#: The command that builds what is missing (the fix most rows of ``doctor`` name).
INSTALL_ROOT = "cvdp-gym toolchain install"


@dataclass(frozen=True)
class Tool:
    """One program found (``path``) or not (``None``), its version line, and the command
    that installs it when missing."""

    name: str
    path: str | None
    version: str | None
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.path is not None


@dataclass(frozen=True)
class Toolchain:
    """What is installed, with versions; the sandbox and the cache key are built from it."""

    kind: str
    iverilog: Tool
    yosys: Tool
    bwrap: Tool
    prlimit: Tool
    envs: dict[str, SimEnv] = field(default_factory=dict)
    root: Path | None = None  # the root filesystem (kind ``root``)
    lock: dict | None = None
    root_verilator: Tool | None = None
    runtime_cache: bool = False  # the root holds Verilator's compiled runtime (``toolchain/root.py``)
    official_tools: bool = False  # the root's Verilator and Yosys are the official image's (``toolchain/tools.py``)
    #: Icarus 12 (``icarus12.py``): the root's unpacked package, or the host's own 12.x.
    icarus12: Tool | None = None

    def env(self, generation: str) -> SimEnv:
        return self.envs[generation]

    @property
    def ready(self) -> bool:
        """Can run the cocotb 2 harnesses (bubblewrap, Icarus and the cocotb2 environment)."""
        return self.bwrap.ok and self.iverilog.ok and self.env("cocotb2").installed

    @property
    def reports_gaps(self) -> bool:
        """Only the host's older Icarus gets the benefit of the doubt (``toolchain_gap``)."""
        return self.kind == "host"

    def verilator(self, generation: str = "cocotb2") -> Tool:
        if self.root_verilator is not None:
            return self.root_verilator
        env = self.envs[generation]
        shim = env.bin_dir / "verilator"
        fix = f"{INSTALL_ROOT} --toolchain host --generation {generation}"
        return Tool("verilator", str(shim) if shim.exists() else None, env.package_version("verilator"), fix)

    def simulator_missing(self, simulator: str) -> str | None:
        """Why runs that need ``simulator`` cannot happen here (with the fix), or None."""
        if simulator == CVDP_SIM:
            return None if self.iverilog.ok else f"Icarus Verilog not found; run: {self.iverilog.fix}"
        if simulator == ICARUS12:
            if self.icarus12 is not None and self.icarus12.ok:
                return None
            if self.kind == "host":
                return f"needs Icarus Verilog 12 (the host has {self.iverilog.version or 'none'}); use the pinned root (--toolchain root)"
            return f"Icarus Verilog 12 is not installed in the root; run: {INSTALL_ROOT}"
        return f"unknown simulator {simulator!r}; expected one of {SIMULATORS}"

    def binds(self, simulator: str) -> list[tuple[Path, str]]:
        """``(host path, sandbox path)`` pairs a run of ``simulator`` binds read-only over the
        toolchain's own files (none for the root's own tools, or a host with Icarus 12)."""
        if simulator == ICARUS12 and self.kind == "root" and self.root is not None:
            return icarus12.overlay(self.root)
        return []

    def simulator_version(self, simulator: str) -> str:
        """The version line of the Icarus a run of ``simulator`` uses (recorded with results)."""
        tool = self.icarus12 if simulator == ICARUS12 else self.iverilog
        return (tool.version if tool is not None else None) or "missing"

    def build_cache_env(self) -> dict[str, str]:
        """Variables that let harness builds reuse the root's read-only Verilator runtime objects."""
        return runtime_cache_env() if self.runtime_cache else {}

    @property
    def runtime_cache_id(self) -> str | None:
        """What filled the root's runtime cache (its recipe), or None without one; images
        imported from this root carry it as a label, so a backend knows they hold the cache."""
        if not self.runtime_cache or not self.lock:
            return None
        return str(self.lock.get("runtime_cache", {}).get("recipe") or "") or None

    def versions(self) -> dict[str, str]:
        """Which toolchain graded a result, recorded with it."""
        out = {
            "toolchain": self.kind,
            "iverilog": self.iverilog.version or "missing",
            "verilator": self.verilator().version or "missing",
            "yosys": self.yosys.version or "missing",
            "iverilog 12": self.simulator_version(ICARUS12),
            "fingerprint": self.fingerprint(),
        }
        for generation, env in sorted(self.envs.items()):
            out[f"cocotb ({generation})"] = env.package_version("cocotb") or "missing"
        return out

    def fingerprint(self) -> str:
        """Versions of everything that can change a verdict (part of every cache key)."""
        if self.kind == "root":
            return "root-" + (lock_fingerprint(self.lock) if self.lock else "missing")
        parts = [f"iverilog={self.iverilog.version}", f"yosys={self.yosys.version}"]
        if self.icarus12 is not None and self.icarus12.ok and self.icarus12.version != self.iverilog.version:
            parts.append(f"iverilog12={self.icarus12.version}")
        for generation, env in sorted(self.envs.items()):
            parts.append(f"{generation}={env.expected_hash if env.installed else 'missing'}")
        return "host-" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
