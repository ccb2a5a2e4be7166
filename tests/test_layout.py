"""The package map (STYLE.md, DESIGN section 1): wings as folders, imports pointing downward, no
import cycle, small modules, faces that name what they offer, a wheel that holds every wing, and
tests that mirror the folders. Read from the source with `ast`, so a new module is checked as
soon as it exists.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "runner"

LAYERS: list[set[str]] = [
    {"runner.__main__", "runner.cli"},
    {"run"},
    {"task", "prompt", "llm", "mcp", "toolcall", "sessionlog", "report"},
    {"workspace"},
    {
        "runner",
        "runner.settings",
        "runner.errors",
        "runner.atomic",
        "runner.redact",
        "runner.outcome",
    },
]
"""From the top down; a module may import its own layer or a lower one. A wing is named by its
folder; the top-level modules by their full names."""

DIRECT_IMPORTS = {
    "runner.report.junit": "junit_xml and ElementTree are imported once the tasks have finished",
    "runner.workspace.server": "it imports the MCP SDK, which the face must not",
}
"""Modules another wing may import by their own name instead of through their wing's face."""

TOP_LEVEL_LIMIT = 8
MODULE_LINE_LIMIT = 450
CROSS_CUTTING_TEST_FOLDERS = {"e2e", "hardening", "fakes", "node"}
"""Folders of tests/ that are not wings: whole-CLI scenarios, hostile input, fakes, npm servers."""
LOOSE_TEST_FILE_LIMIT = 6


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    module_level: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runner_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(RUNNER.rglob("*.py"))}


def is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules.get(name, Path()).name == "__init__.py"


def _resolve(node: ast.ImportFrom, source: str, modules: dict[str, Path]) -> list[str]:
    base = node.module or ""
    if node.level:
        package = source if is_package(source, modules) else source.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
    if len(targets) < len(node.names):
        targets.append(base)
    return targets


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """Imports of runner's own modules; those inside a function are not module-level (lazy)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_functions = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            targets = _resolve(node, name, modules)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            if target == "runner" or target.startswith("runner."):
                yield Import(name, target, node.lineno, id(node) not in in_functions)


def all_imports() -> list[Import]:
    modules = runner_modules()
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def layer_of(name: str) -> int:
    parts = name.split(".")
    for rank, layer in enumerate(LAYERS):
        if name in layer or (len(parts) > 1 and parts[1] in layer):
            return rank
    raise AssertionError(f"{name} is in no layer of LAYERS: add it to the package map")


def runtime_edges() -> dict[str, set[str]]:
    """Module-level imports as Python runs them: importing `a.b.c` first runs `a.b`'s face."""
    modules = runner_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for imp in all_imports():
        if not imp.module_level or imp.target not in modules:
            continue
        edges[imp.source].add(imp.target)
        parent = imp.target.rpartition(".")[0]
        while parent and not (imp.source == parent or imp.source.startswith(parent + ".")):
            edges[imp.source].add(parent)
            parent = parent.rpartition(".")[0]
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def wings() -> list[str]:
    return sorted(p.parent.name for p in RUNNER.glob("*/__init__.py"))


def test_no_module_level_import_cycle() -> None:
    assert find_cycle(runtime_edges()) is None


def test_the_cycle_finder_sees_a_cycle_through_a_face() -> None:
    edges = {"a.x": {"b.y", "b"}, "b": {"b.z"}, "b.z": {"a.x"}, "b.y": set()}
    assert find_cycle(edges) == ["a.x", "b", "b.z", "a.x"]


def test_imports_point_downward() -> None:
    upward = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in all_imports()
        if layer_of(imp.target) < layer_of(imp.source)
    ]
    assert upward == []


def test_other_wings_import_through_the_face() -> None:
    modules = runner_modules()
    around = []
    for imp in all_imports():
        source_wing, target_parts = imp.source.split(".")[:2], imp.target.split(".")
        if len(target_parts) < 3 or target_parts[:2] == source_wing:
            continue
        if imp.target in DIRECT_IMPORTS or not is_package(".".join(target_parts[:2]), modules):
            continue
        around.append(f"{imp.source}:{imp.line} imports {imp.target}")
    assert around == []


def test_the_top_of_runner_holds_at_most_eight_modules() -> None:
    top = sorted(p.name for p in RUNNER.glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, top


def test_every_python_file_of_runner_is_in_a_wing_or_the_top() -> None:
    deeper = [p for p in RUNNER.rglob("*.py") if len(p.relative_to(RUNNER).parts) > 2]
    assert deeper == []
    folders = [p for p in RUNNER.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert [p.name for p in folders if not (p / "__init__.py").exists()] == []


def test_no_module_is_over_the_line_limit() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in RUNNER.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINE_LIMIT
    }
    assert long == {}


@pytest.mark.parametrize("wing", wings())
def test_each_face_says_what_its_wing_does_and_offers_only_what_it_has(wing: str) -> None:
    face = importlib.import_module(f"runner.{wing}")
    assert face.__doc__ and len(face.__doc__.split()) >= 12, "a docstring that says what it does"
    offered = face.__all__
    assert offered, "__all__ names what the wing offers"
    assert sorted(offered) == sorted(set(offered))
    assert [name for name in offered if not hasattr(face, name)] == []


def test_the_wheel_lists_every_package_of_runner() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    modules = runner_modules()
    packages = {name for name in modules if is_package(name, modules)}
    assert packages <= listed, sorted(packages - listed)


def test_tests_mirror_the_wings() -> None:
    tests = REPO / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    folders |= {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    for wing in wings():
        assert any((tests / wing).glob("test_*.py")), f"tests/{wing}/ has no tests"
    assert folders - set(wings()) <= CROSS_CUTTING_TEST_FOLDERS, folders - set(wings())
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert len(loose) <= LOOSE_TEST_FILE_LIMIT, loose
