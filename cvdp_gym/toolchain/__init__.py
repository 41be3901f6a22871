"""The simulation toolchain that stands in for the official ``nvidia/cvdp-sim`` image.

Two kinds:

- ``root`` (the default): a pinned Debian root filesystem with Icarus Verilog 13, the
  official image's Verilator 5.038 and Yosys 0.40 (``toolchain/tools.py``), g++ and the two
  pinned cocotb environments (``toolchain/root.py``), run as ``/`` by bubblewrap and
  imported as the Docker backend's stand-in image.
- ``host``: the machine's own Icarus and Yosys with two venvs (``toolchain/envs.py``); an
  explicit fallback (``--toolchain host``). Debian 12's Icarus 11 rejects constructs that
  Icarus 13 accepts, so only this kind reports ``toolchain_gap``.

Each problem names the simulator it must run on (``Problem.toolchain``): ``cvdp-sim``, the
root itself (the official CVDP image's tools), or ``icarus12``, Debian trixie's Icarus 12
unpacked in the root and bound over its Icarus 13 for that run only (``icarus12.py``;
VerilogEval requires it). ``Toolchain.binds(simulator)`` gives those binds,
``simulator_missing`` says why one cannot run here.

Beside the root, not in it (its fingerprint does not change with them), the quality tools
folder holds OpenSTA and nextpnr-ice40 for area, timing and power (``quality_tools.py``),
mounted read-only at ``/opt/cvdp-quality`` by the runs that measure quality.

``detect(kind)`` reports what is present; ``install`` builds what is missing, or installs a
root packed elsewhere (``archive``: ``pack.py``, for users without root or apt);
``doctor_rows`` feeds ``cvdp-gym doctor``. The root lives under ``toolchain_dir()``, or
wherever ``CVDP_GYM_ROOT`` points (``root_dir()``: a site's shared root, read-only; nothing
writes into a root once built, every run's files go to its own scratch folder). ``Toolchain.versions()`` is recorded with every
result and ``fingerprint()`` is part of every grading cache key.

Modules: ``toolchain`` (``Tool``, ``Toolchain``, the simulators), ``settings`` (where it lives,
which kind), ``detection`` (``detect``), ``installer`` (``install``), ``doctor``
(``doctor_rows``), ``quality_tools`` (OpenSTA and nextpnr beside the root).
"""

from __future__ import annotations

from cvdp_gym.toolchain.detection import APT_PACKAGES as APT_PACKAGES
from cvdp_gym.toolchain.detection import detect
from cvdp_gym.toolchain.doctor import doctor_rows
from cvdp_gym.toolchain.envs import GENERATIONS, SimEnv
from cvdp_gym.toolchain.installer import install
from cvdp_gym.toolchain.root import RootBuildError
from cvdp_gym.toolchain.settings import KINDS, default_kind, root_dir, toolchain_dir
from cvdp_gym.toolchain.settings import ROOT_ENV as ROOT_ENV
from cvdp_gym.toolchain.toolchain import CVDP_SIM, ICARUS12, SIMULATORS, Tool, Toolchain
from cvdp_gym.toolchain.toolchain import INSTALL_ROOT as INSTALL_ROOT

__all__ = [
    "CVDP_SIM",
    "GENERATIONS",
    "ICARUS12",
    "KINDS",
    "SIMULATORS",
    "RootBuildError",
    "SimEnv",
    "Tool",
    "Toolchain",
    "default_kind",
    "detect",
    "doctor_rows",
    "install",
    "root_dir",
    "toolchain_dir",
]
