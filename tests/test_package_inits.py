"""``__init__.py`` files hold names, not logic: imports, ``__all__``, docstrings and
constants, with a lazy module-level ``__getattr__``/``__dir__`` (PEP 562) allowed. A function
or class defined in one belongs in a module named for what it does, re-exported by the
package, so the package reads as its table of contents."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cvdp_gym", "rtl_trainer")
#: Module-level functions a package may define: the lazy attribute hooks of PEP 562.
LAZY_HOOKS = ("__getattr__", "__dir__")
#: Not checked here: the bundled problems' own files (data, not this package's code).
SKIPPED = ("cvdp_gym/data/bundled/",)


def definitions(source: str) -> list[str]:
    """``name@line`` of every function or class defined in ``source``, the lazy hooks at
    module level excepted."""
    tree = ast.parse(source)
    allowed = {
        id(node)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in LAZY_HOOKS
    }
    return [
        f"{node.name}@{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and id(node) not in allowed
    ]


def package_inits() -> list[Path]:
    inits = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("__init__.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not any(relative == skip or relative.startswith(skip) for skip in SKIPPED):
                inits.append(path)
    return inits


def test_no_init_defines_a_function_or_class():
    found = {
        path.relative_to(ROOT).as_posix(): names
        for path in package_inits()
        if (names := definitions(path.read_text(encoding="utf-8")))
    }
    assert not found, f"move these into a module and re-export them from the package: {found}"


def test_the_check_finds_definitions_and_lets_lazy_hooks_through():
    source = (
        "from x import y\n"
        "__all__ = ['y']\n"
        "def __getattr__(name): ...\n"
        "def __dir__(): ...\n"
        "def helper(): ...\n"
        "class Thing: ...\n"
        "if True:\n"
        "    async def hidden(): ...\n"
    )
    assert definitions(source) == ["helper@5", "Thing@6", "hidden@8"]
    assert len(package_inits()) > 20  # the walk found the packages
