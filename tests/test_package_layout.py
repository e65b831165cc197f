"""Package layout rules: no package re-exports names, and facades load no network code.

Why: a name re-exported by a package ``__init__`` has two import paths, and readers (and
duplicates checks) cannot tell which module owns it. Importers name the defining module;
an ``__init__`` holds its docstring and, at most, code of its own.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "root_packages"
]
INITS = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py"))


@pytest.mark.parametrize("init", INITS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_package_re_exports_what_another_module_defines(init: Path) -> None:
    tree = ast.parse(init.read_text())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
    }
    exported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported = {ast.literal_eval(e) for e in node.value.elts}  # type: ignore[attr-defined]
    assert not exported & imported, (
        f"{init.relative_to(ROOT)} re-exports {sorted(exported & imported)}"
    )
    assert "__getattr__" not in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, (
        f"{init.relative_to(ROOT)} forwards attributes lazily"
    )


def test_importing_the_podgrouper_loads_neither_kopf_nor_aiohttp() -> None:
    code = (
        "import sys, podgrouper, podgrouper.reconciling, tests.kits.podgrouper_kube; "
        "print(sorted(m for m in ('kopf', 'aiohttp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
