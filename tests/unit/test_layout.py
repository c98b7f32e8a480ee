"""The package's shape (docs/DESIGN.md, "The parts"): no import circle between its modules
nor between its parts, every module importable on its own, no module over 400 lines
without the reason at its top, and tests/unit mirroring the package."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from kafkalab.paths import repo_root

PACKAGE = repo_root() / "kafkalab"
MAX_LINES = 400


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__.py)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(repo_root()).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules `path` imports, wherever the import stands (in a function, under
    TYPE_CHECKING): `from a.b import c` is module a.b.c when there is one, else a.b."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [n if n in known else node.module for n in names]
        else:
            continue
        found |= {n for n in names if n in known}
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) - {name} for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> Iterator[list[str]]:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                yield sorted(component)

    for v in sorted(edges):
        if v not in index:
            yield from visit(v)


def part(module: str) -> str:
    """kafkalab.failover.runner -> failover; kafkalab.status -> status."""
    return module.split(".")[1] if module.count(".") else module


def test_no_import_circle_between_modules():
    assert list(circles(graph())) == []


def test_no_import_circle_between_the_parts():
    """The parts stack up: cli on top; status and doctor; labs, failover and streaming; kafka;
    targets; artifacts; the shared modules (errors, paths, render, topology, inventory)."""
    between: dict[str, set[str]] = {}
    for module, used in graph().items():
        if module == "kafkalab":
            continue
        between.setdefault(part(module), set()).update(
            part(u) for u in used if u != "kafkalab" and part(u) != part(module)
        )
    assert list(circles(between)) == []
    assert "cli" not in set().union(*(between[p] for p in between if p != "__main__"))


def test_every_module_imports_on_its_own():
    """Each module imported first, with none of the package's modules loaded before it: one
    that works only after another was imported would fail here."""
    names = [n for n in modules() if n != "kafkalab.__main__"]
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] == 'kafkalab']:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=repo_root()
    )
    assert proc.returncode == 0, proc.stderr


def test_no_module_over_400_lines_without_a_reason():
    long = []
    for name, path in modules().items():
        text = path.read_text()
        doc = ast.get_docstring(ast.parse(text)) or ""
        if text.count("\n") > MAX_LINES and f"over {MAX_LINES} lines" not in doc:
            long.append(f"{name}: {text.count(chr(10))} lines")
    assert long == []


def test_unit_tests_mirror_the_package():
    """tests/unit/<part>/ for each subpackage of kafkalab/, and no test module at the top of
    tests/unit for a module that lives in a subpackage."""
    tests = repo_root() / "tests" / "unit"
    parts = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert [p for p in parts if not (tests / p).is_dir()] == []
    inside = {path.stem for path in PACKAGE.glob("*/**/*.py")} - {"__init__"}
    top = {path.stem.removeprefix("test_") for path in tests.glob("test_*.py")}
    assert sorted(top & inside) == []


def test_only_the_cli_and_the_resolver_know_the_embedded_target():
    """Labs, faults, scenarios, Spark, status and doctor work on any inventory cluster
    (kafkalab.targets.cluster): none of them imports the embedded target (issue 12)."""
    users = sorted(m for m, used in graph().items() if "kafkalab.targets.embedded" in used)
    assert users == ["kafkalab.cli.cluster", "kafkalab.targets.resolve"]
