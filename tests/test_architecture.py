"""The shape of the package: no import circles, small modules, data flowing one way."""

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "distgate"
LARGEST_MODULE = 600  # lines


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports: at module level, inside functions and
    under ``if TYPE_CHECKING`` alike (a circle through any of them is a circle).
    ``from a.b import c`` names module a.b.c when it is one, else a.b."""
    names = set()
    for node in ast.walk(_parsed(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in known else node.module)
    return {name for name in names if name in known}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), and modules
    that import themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@functools.cache
def compiled_modules() -> set[str]:
    """The package's compiled modules (Cython sources), by dotted name: imported like any
    other, but not Python to parse."""
    return {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for path in PACKAGE.rglob("*.pyx")
    }


@functools.cache  # (parsed once: each test of this module reads the same files)
def package_graph() -> dict[str, set[str]]:
    known = {**modules(), **dict.fromkeys(compiled_modules())}
    graph = {name: imports(path, known) for name, path in modules().items()}
    return {**graph, **{name: set() for name in compiled_modules()}}


def test_no_module_imports_another_that_imports_it_back():
    assert circles(package_graph()) == []


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c"], ["e"]]


@pytest.mark.parametrize(
    "lower, higher",
    [
        ("distgate.stats", "distgate.gate"),  # a metric never knows the gate
        ("distgate.stats", "distgate.release"),
        ("distgate.stats", "distgate.data"),  # ... nor reads a file
        ("distgate.stats", "distgate.report"),
        ("distgate.gate", "distgate.report"),  # the gate never prints
        ("distgate.gate", "distgate.cli"),
        ("distgate.release", "distgate.cli"),
        ("distgate.data", "distgate.gate"),
        ("distgate.data", "distgate.release"),
        ("distgate.report", "distgate.cli"),
        ("distgate.observer", "distgate.gate"),  # the attacks score releases, any gate's
        ("distgate.observer", "distgate.report"),
        ("distgate.stats", "distgate.observer"),
    ],
)
def test_data_flows_one_way(lower, higher):
    """Files -> codes and counts -> metrics -> decisions -> report: no module of a lower
    room imports one of a higher room."""
    wrong = [
        (name, target)
        for name, targets in package_graph().items()
        if name == lower or name.startswith(lower + ".")
        for target in targets
        if target == higher or target.startswith(higher + ".")
    ]
    assert wrong == []


def test_every_module_fits_on_a_few_screens():
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text().splitlines())) > LARGEST_MODULE
    }
    assert long == {}


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_kernel_has_one_caller():
    """replay, simulate, serve, the state checks and the release models all decide through
    distgate.gate.Gate, which chooses one loop per gate: only the engine builds a loop,
    and only the compiled loop calls the kernel."""
    graph = package_graph()
    loops = {name for name in graph if name.startswith("distgate.gate._") and "_loop" in name}
    assert loops == {
        "distgate.gate._compiled_loop",
        "distgate.gate._indistinguishable_loop",
        "distgate.gate._reference_loop",
    }
    builders = {name for name, targets in graph.items() if targets & loops}
    assert builders == {"distgate.gate.engine"}
    kernel = "distgate.gate._kernel"
    callers = {
        name
        for name, targets in graph.items()
        if not _inside(name, kernel) and any(_inside(t, kernel) for t in targets)
    }
    assert callers == {"distgate.gate._compiled_loop"}


def test_a_private_module_is_imported_from_its_own_package_only():
    """A module or package whose name starts with an underscore (the gate's loops and
    kernel, the compiled parts) is a part of the package that holds it, never reached
    from another one."""
    wrong = [
        (name, target)
        for name, targets in package_graph().items()
        for target in targets
        if (owner := _owner(target)) is not None and not _inside(name, owner)
    ]
    assert wrong == []


def _owner(module: str) -> str | None:
    """The package a private module is a part of (that holds its first private name)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None
