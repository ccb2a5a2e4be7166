"""The package map (STYLE.md, DESIGN section 1): wings as folders and rooms inside the largest
wings, imports pointing downward, no import loop (imports inside functions count too), small
modules and folders, faces that name what they offer, a wheel that holds every package, and tests
that mirror the folders. Read from the source with `ast`, so a new module is checked as soon as it
exists.
"""

from __future__ import annotations

import ast
import importlib
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "runner"

LAYERS: list[set[str]] = [
    {"runner.__main__", "runner.cli", "cli"},
    {"run"},
    {"task", "prompt", "llm", "mcp", "toolcall", "sessionlog", "report"},
    {"workspace"},
    {
        "runner",
        "runner.settings",
        "runner.configfile",
        "runner.errors",
        "runner.atomic",
        "runner.redact",
        "runner.outcome",
        # The governor's config is part of the settings; the governor itself needs no more.
        "fleet",
    },
]
"""From the top down; a module may import its own layer or a lower one. A wing is named by its
folder; the top-level modules by their full names."""

RUN_LAYERS: list[set[str]] = [
    {"runner.run", "runner.run.app"},
    {"resume"},
    {"plan"},
    {"session"},
    {"agents"},
    {"guard", "telemetry"},
    {"turn"},
]
"""The rooms of `runner/run/`, from the top down (README, Architecture): `app` runs and resumes,
`resume` turns logs into jobs, `plan` checks and prepares before anything runs, `session` runs
one task (a sub-agent's session too), `agents` is the sub_agent tool and executor, `guard` and
`telemetry` wrap the loop's calls, and `turn` is the loop itself."""

DIRECT_IMPORTS = {
    "runner.report.junit": "junit_xml and ElementTree are imported once the tasks have finished",
    "runner.workspace.server": "it imports the MCP SDK, which the face must not",
}
"""Modules another wing may import by their own name instead of through their wing's face."""

TOP_LEVEL_LIMIT = 8
RUN_ENTRY_LIMIT = 8
"""`ls runner/run/` shows at most this many entries besides its face."""
FOLDER_MODULE_LIMIT = 12
MODULE_LINE_LIMIT = 450
CROSS_CUTTING_TEST_FOLDERS = {"e2e", "hardening", "fakes", "node"}
"""Folders of tests/ that are not wings: whole-CLI scenarios, hostile input, fakes, npm servers."""
LOOSE_TEST_FILE_LIMIT = 6

Where = Literal["module", "function", "type_checking"]


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    where: Where
    """At module level, inside a function (run when it is called), or in an `if TYPE_CHECKING:`
    block (never run)."""


def module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_under(package: Path, root: Path = REPO) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(package.rglob("*.py"))}


def runner_modules() -> dict[str, Path]:
    return modules_under(RUNNER)


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


def _is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`, and nothing else (an `or` runs)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _places(tree: ast.Module) -> dict[int, Where]:
    """Where each node that is not at module level sits: in a function, or type-checking only."""
    places: dict[int, Where] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                places.update({id(n): "type_checking" for n in ast.walk(inner)})
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for inner in ast.walk(node):
                places.setdefault(id(inner), "function")
    return places


def imports_of(
    name: str, path: Path, modules: dict[str, Path], prefix: str = "runner"
) -> Iterator[Import]:
    """Imports of the package's own modules, each with where it sits."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    places = _places(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            targets = _resolve(node, name, modules)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            if target == prefix or target.startswith(prefix + "."):
                yield Import(name, target, node.lineno, places.get(id(node), "module"))


def all_imports(modules: dict[str, Path] | None = None, prefix: str = "runner") -> list[Import]:
    modules = runner_modules() if modules is None else modules
    return [
        imp for name, path in modules.items() for imp in imports_of(name, path, modules, prefix)
    ]


def import_edges(imports: list[Import], modules: dict[str, Path]) -> dict[str, set[str]]:
    """Every import that runs, at module level or when a function is called, as Python runs it:
    importing `a.b.c` first runs `a.b`'s face. Imports for the type checker alone never run."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for imp in imports:
        if imp.where == "type_checking" or imp.target not in modules:
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


def packages() -> list[str]:
    """Every folder of runner/ with a face: the wings and their rooms."""
    modules = runner_modules()
    return sorted(name for name in modules if is_package(name, modules) and name != "runner")


def wings() -> list[str]:
    return sorted(p.parent.name for p in RUNNER.glob("*/__init__.py"))


def test_no_import_loop_even_through_imports_inside_functions() -> None:
    modules = runner_modules()
    assert find_cycle(import_edges(all_imports(modules), modules)) is None


def test_the_cycle_finder_sees_a_cycle_through_a_face() -> None:
    edges = {"a.x": {"b.y", "b"}, "b": {"b.z"}, "b.z": {"a.x"}, "b.y": set()}
    assert find_cycle(edges) == ["a.x", "b", "b.z", "a.x"]


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return modules_under(tmp_path / "pkg", tmp_path)


def test_an_import_inside_a_function_that_closes_a_loop_is_a_loop(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n",
            "b.py": "def helper():\n    from pkg.a import thing\n    return thing\n",
        },
    )
    edges = import_edges(all_imports(modules, "pkg"), modules)
    assert find_cycle(edges) == ["pkg.a", "pkg.b", "pkg.a"]


def test_an_import_for_the_type_checker_alone_closes_no_loop(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n"
            "if TYPE_CHECKING or __name__ != '__main__':\n    import pkg.c\n",
            "c.py": "",
        },
    )
    imports = all_imports(modules, "pkg")
    assert {(i.source, i.target, i.where) for i in imports if i.source == "pkg.b"} == {
        ("pkg.b", "pkg.a", "type_checking"),
        ("pkg.b", "pkg.c", "module"),
    }
    assert find_cycle(import_edges(imports, modules)) is None


def test_a_loop_through_a_room_face_inside_a_function_is_found(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "room/__init__.py": "from pkg.room.inner import thing\n",
            "room/inner.py": "def thing():\n    from pkg.user import used\n",
            "user.py": "from pkg.room.other import x\n",
            "room/other.py": "",
        },
    )
    cycle = find_cycle(import_edges(all_imports(modules, "pkg"), modules))
    assert cycle is not None and "pkg.room" in cycle and "pkg.user" in cycle


def layer_of(name: str) -> int:
    parts = name.split(".")
    for rank, layer in enumerate(LAYERS):
        if name in layer or (len(parts) > 1 and parts[1] in layer):
            return rank
    raise AssertionError(f"{name} is in no layer of LAYERS: add it to the package map")


def run_layer_of(name: str) -> int:
    parts = name.split(".")
    for rank, layer in enumerate(RUN_LAYERS):
        if name in layer or (len(parts) > 2 and parts[2] in layer):
            return rank
    raise AssertionError(f"{name} is in no room of RUN_LAYERS: add it to the map of run/")


def test_imports_point_downward() -> None:
    upward = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in all_imports()
        if layer_of(imp.target) < layer_of(imp.source)
    ]
    assert upward == []


def test_imports_between_the_rooms_of_run_point_downward() -> None:
    inside = [
        imp
        for imp in all_imports()
        if imp.source.startswith("runner.run") and imp.target.startswith("runner.run")
    ]
    upward = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in inside
        if run_layer_of(imp.target) < run_layer_of(imp.source)
    ]
    assert upward == []
    rooms = {p.name for p in (RUNNER / "run").iterdir() if (p / "__init__.py").exists()}
    mapped = set().union(*RUN_LAYERS) - {"runner.run", "runner.run.app"}
    assert rooms == mapped, "RUN_LAYERS names every room of run/ and no other"


def _around_the_face(source: str, target: str, modules: dict[str, Path]) -> bool:
    """Whether `source` reaches into a package (a wing or a room) it is not part of, past that
    package's face: below their common parent, the target's first step must be a module."""
    source_parts, target_parts = source.split("."), target.split(".")
    if is_package(source, modules):
        source_parts.append("__init__")
    common = 0
    while (
        common < min(len(source_parts), len(target_parts))
        and source_parts[common] == target_parts[common]
    ):
        common += 1
    if common >= len(target_parts) - 1:
        return False  # the target is the source's own package, a sibling module, or a face
    entered = ".".join(target_parts[: common + 1])
    return is_package(entered, modules) and target not in DIRECT_IMPORTS


def test_other_packages_import_through_the_face() -> None:
    modules = runner_modules()
    around = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in all_imports(modules)
        if _around_the_face(imp.source, imp.target, modules)
    ]
    assert around == []


def test_the_face_rule_sees_rooms() -> None:
    modules = {
        "r": Path("r/__init__.py"),
        "r.w": Path("r/w/__init__.py"),
        "r.w.room": Path("r/w/room/__init__.py"),
        "r.w.room.m": Path("r/w/room/m.py"),
        "r.w.other": Path("r/w/other/__init__.py"),
        "r.w.other.n": Path("r/w/other/n.py"),
        "r.w.top": Path("r/w/top.py"),
        "r.v": Path("r/v/__init__.py"),
        "r.v.x": Path("r/v/x.py"),
    }
    assert _around_the_face("r.w.other.n", "r.w.room.m", modules)
    assert _around_the_face("r.w.top", "r.w.room.m", modules)
    assert _around_the_face("r.w", "r.w.room.m", modules)
    assert _around_the_face("r.v.x", "r.w.room", modules)
    assert not _around_the_face("r.w.other.n", "r.w.room", modules)
    assert not _around_the_face("r.w.room", "r.w.room.m", modules)
    assert not _around_the_face("r.w.room.m", "r.w.top", modules)
    assert not _around_the_face("r.w.top", "r.w.room", modules)
    assert not _around_the_face("r.v.x", "r.w", modules)


def test_the_top_of_runner_holds_at_most_eight_modules() -> None:
    top = sorted(p.name for p in RUNNER.glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, top


def test_run_shows_at_most_eight_entries_besides_its_face() -> None:
    entries = sorted(
        p.name for p in (RUNNER / "run").iterdir() if p.name not in ("__init__.py", "__pycache__")
    )
    assert len(entries) <= RUN_ENTRY_LIMIT, entries


def test_no_folder_holds_more_than_twelve_modules() -> None:
    crowded = {}
    for folder in [RUNNER, *(path.parent for path in RUNNER.rglob("*/__init__.py"))]:
        count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        if count > FOLDER_MODULE_LIMIT:
            crowded[str(folder.relative_to(REPO))] = count
    assert crowded == {}


def test_every_python_file_of_runner_is_in_a_room_a_wing_or_the_top() -> None:
    deeper = [p for p in RUNNER.rglob("*.py") if len(p.relative_to(RUNNER).parts) > 3]
    assert deeper == []
    folders = [p for p in RUNNER.rglob("*") if p.is_dir() and "__pycache__" not in p.parts]
    assert [str(p) for p in folders if not (p / "__init__.py").exists()] == []


def test_no_module_is_over_the_line_limit() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in RUNNER.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINE_LIMIT
    }
    assert long == {}


@pytest.mark.parametrize("package", packages())
def test_each_face_says_what_its_package_does_and_offers_only_what_it_has(package: str) -> None:
    face = importlib.import_module(package)
    assert face.__doc__ and len(face.__doc__.split()) >= 12, "a docstring that says what it does"
    offered = face.__all__
    assert offered, "__all__ names what the package offers"
    assert sorted(offered) == sorted(set(offered))
    assert [name for name in offered if not hasattr(face, name)] == []


def test_the_wheel_lists_every_package_of_runner() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    assert {"runner", *packages()} <= listed, sorted({"runner", *packages()} - listed)


def test_tests_mirror_the_wings_and_their_rooms() -> None:
    tests = REPO / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    folders |= {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    for package in packages():
        mirror = tests.joinpath(*package.split(".")[1:])
        assert any(mirror.rglob("test_*.py")), f"{mirror.relative_to(REPO)} has no tests"
        assert (mirror / "__init__.py").exists(), f"{mirror.relative_to(REPO)} has no __init__"
    assert folders - set(wings()) <= CROSS_CUTTING_TEST_FOLDERS, folders - set(wings())
    for wing in wings():
        rooms = {p.name for p in (RUNNER / wing).iterdir() if (p / "__init__.py").exists()}
        test_rooms = {p.name for p in (tests / wing).iterdir() if any(p.glob("test_*.py"))}
        assert test_rooms <= rooms, f"tests/{wing}/ has folders that mirror no room"
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert len(loose) <= LOOSE_TEST_FILE_LIMIT, loose
