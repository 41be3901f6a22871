"""Harnesses that draw at random, and the seed that makes one run reproducible.

Contract: ``problem_randomness(problem)`` says why a problem's verdict can change from run to
run: its harness's reasons, and the flow's own draw where it declares one (``extra["draws"]``:
a verification task draws the mutants it scores per run). ``harness_randomness(harness)`` reads a harness's Python files (never runs them)
and returns why its verdict can change from run to run, one reason a line, or ``()``:

- *parameters*: a file pytest runs (``test_runner*.py``, or one that imports pytest or
  cocotb's runner) uses the ``random`` module without a fixed seed (``random.randint`` at
  import or in ``pytest.mark.parametrize``): each run tests the design with other
  parameter values;
- *stimulus*: another Python file (a cocotb test module, a helper library it imports)
  uses the ``random`` module, which cocotb seeds from the clock unless
  ``COCOTB_RANDOM_SEED``/``RANDOM_SEED`` is pinned (in ``.env``, the compose
  ``environment`` or ``runner.test(seed=...)``);
- *entropy*: ``random.seed()`` with no argument or the clock, ``random.Random()`` without
  a seed, ``numpy.random`` without a seed, ``os.urandom``, ``secrets``, ``uuid4``.

Seeded generators (``random.Random(7)``, a module-level ``random.seed(1234)``) are
deterministic and not reported.

``seed_environment(seed, generation, environment)`` is what makes a run reproducible
without editing the harness: the variables that make every Python interpreter of the run
(pytest's and the simulator's embedded one) seed ``random`` from ``seed`` at start-up, through a
``sitecustomize`` module of ours placed on ``PYTHONPATH`` (``SEED_DIR``, written into the
run's own ``/tmp`` by ``write_seed_module``; it then runs the image's own
``sitecustomize``), and cocotb's seed variable for the harness's cocotb generation, unless
the harness pins one itself. Nothing else of the run changes: the harness's ``PYTHONPATH``
entries follow ours, in their order. A run given no seed gets a fresh one from
``cvdp_gym.seeds.draw_seed`` (where every seed of the project is drawn).
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path, PurePosixPath

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.compose import parse_env_file

__all__ = [
    "SEED_DIR",
    "SEED_VARIABLE",
    "harness_randomness",
    "pinned_cocotb_seed",
    "problem_randomness",
    "seed_environment",
    "write_seed_module",
]

#: The variable our ``sitecustomize`` reads the seed from.
SEED_VARIABLE = "CVDP_GYM_HARNESS_SEED"
#: Where the ``sitecustomize`` lies inside the sandbox (the run's own ``/tmp``).
SEED_DIR = "/tmp/cvdp-gym-seed"
#: cocotb's seed variable per generation (cocotb 2 reads ``COCOTB_RANDOM_SEED`` first and
#: still honours ``RANDOM_SEED``; cocotb 1.x reads ``RANDOM_SEED``).
COCOTB_SEED_VARIABLES = {"cocotb2": "COCOTB_RANDOM_SEED", "cocotb1": "RANDOM_SEED"}
_ALL_COCOTB_SEEDS = ("COCOTB_RANDOM_SEED", "RANDOM_SEED")

#: Module-level functions of ``random`` that draw from the shared generator.
_DRAWS = frozenset({
    "random", "randint", "randrange", "choice", "choices", "sample", "shuffle", "uniform",
    "getrandbits", "randbytes", "gauss", "normalvariate", "triangular", "betavariate",
    "expovariate", "gammavariate", "lognormvariate", "vonmisesvariate", "paretovariate",
    "weibullvariate", "binomialvariate",
})
_ENTROPY_CALLS = {("os", "urandom"), ("uuid", "uuid4")}
#: A file pytest itself runs (not the simulator): it imports pytest or cocotb's runner.
_PYTEST_SIDE = re.compile(r"^\s*(import\s+pytest\b|from\s+pytest\b|from\s+cocotb(_tools)?\.runner\s+import|import\s+cocotb(_tools)?\.runner\b)", re.M)
_RUNNER_SEED = re.compile(r"\.test\([^)]*\bseed\s*=", re.S)

#: The ``sitecustomize`` placed on ``PYTHONPATH``: seed ``random`` (and make an unseeded
#: ``seed()``/``Random()`` derive from the seed too), then run the next ``sitecustomize``.
SITECUSTOMIZE = '''\
"""cvdp-gym: seed Python's random module from CVDP_GYM_HARNESS_SEED, then hand over."""
import os as _os
import sys as _sys


def _cvdp_gym_seed():
    text = _os.environ.get("CVDP_GYM_HARNESS_SEED", "")
    if not text.lstrip("-").isdigit():
        return
    import random
    base, drawn = int(text), [0]
    original = random.Random.seed

    def seed(self, a=None, version=2):
        if a is None:  # an unseeded seed() or Random(): derived from the run's seed
            drawn[0] += 1
            a = base * 1000003 + drawn[0]
        return original(self, a, version)

    random.Random.seed = seed
    random.seed = random._inst.seed
    random.seed(base)


def _cvdp_gym_next():
    import importlib.machinery
    import importlib.util
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in _sys.path if _os.path.abspath(p or _os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_cvdp_gym_seed()
_cvdp_gym_next()
'''


def write_seed_module(tmp_dir: Path) -> None:
    """Write the ``sitecustomize`` into ``tmp_dir`` (the host folder seen as ``/tmp``)."""
    folder = tmp_dir / PurePosixPath(SEED_DIR).name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")


def pinned_cocotb_seed(environment: Mapping[str, str]) -> str | None:
    """The cocotb seed a service's own environment pins, if any."""
    return next((environment[k] for k in _ALL_COCOTB_SEEDS if environment.get(k, "").strip()), None)


def seed_environment(seed: int, generation: str | None, environment: Mapping[str, str]) -> dict[str, str]:
    """Variables to add to a service's ``environment`` so that its run uses ``seed``.

    The harness's ``PYTHONPATH`` is kept after ``SEED_DIR``; a cocotb seed the harness
    pins is kept (cocotb then uses it, and so does the record).
    """
    existing = environment.get("PYTHONPATH", "")
    added = {SEED_VARIABLE: str(seed), "PYTHONPATH": SEED_DIR + (":" + existing if existing else "")}
    if pinned_cocotb_seed(environment) is None:
        added[COCOTB_SEED_VARIABLES.get(generation or "cocotb2", "COCOTB_RANDOM_SEED")] = str(seed)
    return added


def problem_randomness(problem: Problem) -> tuple[str, ...]:
    """Why ``problem``'s verdict can change from run to run (``()``: it cannot)."""
    own = problem.extra.get("draws")
    return (*harness_randomness(problem.harness), *((str(own),) if own else ()))


def harness_randomness(harness: Mapping[str, str]) -> tuple[str, ...]:
    """Why a harness's verdict can change from run to run (empty: it cannot, as far as a
    static reading of its Python files tells)."""
    digest = hashlib.sha256()
    for path in sorted(harness):
        digest.update(path.encode() + b"\0" + harness[path].encode("utf-8", "replace") + b"\0")
    return _scan(digest.hexdigest(), tuple(sorted(harness.items())))


@lru_cache(maxsize=4096)
def _scan(_digest: str, items: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    harness = dict(items)
    pinned = _cocotb_seed_pinned(harness)
    reasons: list[str] = []
    for path, text in items:
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        found = _RandomUse()
        found.visit(tree)
        name = PurePosixPath(path).name
        pytest_side = name.startswith("test_runner") or bool(_PYTEST_SIDE.search(text))
        for line, what in found.entropy:
            reasons.append(f"entropy: {name}:{line} {what}")
        if found.draws and not found.module_seeded:
            line, what = found.draws[0]
            if pytest_side:
                reasons.append(f"parameters: {name}:{line} {what} with no fixed seed (pytest draws it on every run)")
            elif not pinned:
                reasons.append(f"stimulus: {name}:{line} {what}, and cocotb's RANDOM_SEED is not pinned (cocotb seeds from the clock)")
    return tuple(reasons)


def _cocotb_seed_pinned(harness: Mapping[str, str]) -> bool:
    """Whether the harness pins cocotb's seed (an env file, compose ``environment``, or
    ``runner.test(seed=...)``)."""
    for path, text in harness.items():
        name = PurePosixPath(path).name
        if name.startswith(".env") and pinned_cocotb_seed(parse_env_file(text)) is not None:
            return True
        if name.endswith((".yml", ".yaml")) and re.search(r"\b(COCOTB_)?RANDOM_SEED\s*[:=]\s*\S", text):
            return True
        if name.endswith(".py") and _RUNNER_SEED.search(text):
            return True
    return False


class _RandomUse(ast.NodeVisitor):
    """Draws from the shared ``random`` generator, module-level fixed seeds, entropy sources."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> "random" or "random.<draw>"
        self.draws: list[tuple[int, str]] = []
        self.entropy: list[tuple[int, str]] = []
        self.module_seeded = False
        self.numpy_seeded = False
        self._depth = 0

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in ("random", "secrets", "numpy", "numpy.random", "os", "uuid"):
                self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "random":
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"random.{alias.name}"
        elif node.module == "secrets":
            self.entropy.append((node.lineno, "imports secrets"))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        target = self._qualified(node.func)
        if target is not None:
            self._classify(node, target)
        self.generic_visit(node)

    def _qualified(self, func: ast.expr) -> str | None:
        """``random.randint``-style dotted name of a call target, through import aliases."""
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in self.aliases:
            return None
        return ".".join([self.aliases[func.id], *reversed(parts)])

    def _classify(self, node: ast.Call, target: str) -> None:
        unseeded = not node.args and not node.keywords
        if target == "random.seed":
            if unseeded or _mentions_time(node):
                self.entropy.append((node.lineno, "random.seed() from the clock or the OS"))
            elif self._depth == 0:
                self.module_seeded = True
        elif target in ("random.Random", "random.SystemRandom"):
            if unseeded or target == "random.SystemRandom" or _mentions_time(node):
                self.entropy.append((node.lineno, f"{target}() without a fixed seed"))
        elif target.startswith("random.") and target.split(".", 1)[1] in _DRAWS:
            self.draws.append((node.lineno, target))
        elif target == "numpy.random.seed":
            self.numpy_seeded = self.numpy_seeded or not unseeded
        elif target.startswith("numpy.random.") and not self.numpy_seeded:
            if target.endswith("default_rng") and not unseeded:
                return
            self.entropy.append((node.lineno, f"{target} without a fixed seed"))
        elif tuple(target.split(".")[:2]) in _ENTROPY_CALLS or target.startswith("secrets."):
            self.entropy.append((node.lineno, target))


def _mentions_time(node: ast.Call) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "time" for n in ast.walk(node))
