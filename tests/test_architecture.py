"""The shape of the package: no import circles, small modules, data flowing one way down
the layers docs/architecture.md lists."""

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "distgate"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
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


def layers() -> list[list[str]]:
    """The floors of the package from the top down, each the rooms on it, as the section
    'Layers' of docs/architecture.md lists them (the first text block after its heading,
    one floor a line, rooms separated by commas)."""
    text = ARCHITECTURE.read_text()
    section = text[text.index("\n## Layers\n") :]
    block = section[section.index("```text\n") + len("```text\n") :]
    block = block[: block.index("```")]
    return [[room.strip() for room in line.split(",")] for line in block.splitlines()]


def room_of(module: str) -> str:
    """The room a module stands in: its top-level package or module under distgate (the
    package's own __init__ is the room ``distgate``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph: dict[str, set[str]], floors: list[list[str]]) -> list[tuple]:
    """Every import from a room to one on the same floor or higher (floors listed from
    the top down): (module, imported module)."""
    floor = {room: len(floors) - i for i, rooms in enumerate(floors) for room in rooms}
    return sorted(
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if room_of(name) != room_of(target) and floor[room_of(name)] <= floor[room_of(target)]
    )


def test_the_documented_layers_hold_every_room_once():
    listed = [room for rooms in layers() for room in rooms]
    assert len(listed) == len(set(listed))
    assert set(listed) == {room_of(name) for name in package_graph()}


def test_every_import_goes_down_the_documented_layers():
    """No module imports one of a room on its own floor or higher (docs/architecture.md,
    'Layers'): data flows from files to codes, metrics, decisions and the report."""
    assert upward_imports(package_graph(), layers()) == []


def test_the_layer_check_finds_an_import_up_or_sideways():
    graph = {
        "distgate.a.one": {"distgate.b"},
        "distgate.b": {"distgate.c.two", "distgate.a.one"},
        "distgate.c.two": {"distgate.c.three"},
        "distgate.c.three": set(),
    }
    assert upward_imports(graph, [["a"], ["b"], ["c"]]) == [("distgate.b", "distgate.a.one")]
    assert upward_imports(graph, [["a", "b"], ["c"]]) == [
        ("distgate.a.one", "distgate.b"),
        ("distgate.b", "distgate.a.one"),
    ]


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


def metric_name_decisions(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines where a metric's name, written as a string, is compared (``==``, ``!=``,
    ``in``, alone or in a literal tuple, list or set) or iterated over in a literal."""

    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(element) for element in node.elts)
        return False

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(map(named, [node.left, *node.comparators])):
            lines.append(node.lineno)
        elif isinstance(node, (ast.For, ast.comprehension)) and named(node.iter):
            lines.append(node.iter.lineno)
    return sorted(set(lines))


def test_the_decision_finder_finds_names_compared_or_iterated():
    source = """
if name == "kld": pass
if "cst" in chosen or m != 'mis': pass
if name in ("kld", "other"): pass
for name in ("dqt", "exposure"): pass
xs = [n for n in ["emd"]]
if name == "kldx" or record.judges_distance or LAWS["kld"]: pass
"""
    names = {"kld", "cst", "mis", "dqt", "emd"}
    assert metric_name_decisions(ast.parse(source), names) == [2, 3, 4, 5, 6]


def test_metrics_are_told_apart_by_their_records_not_their_names():
    """What sets a metric apart (kld judges a target by D(y) alone, cst merges values, dqt
    needs three targets, ...) is a field of its record in stats/metrics/registry.py: only
    the registry and the metrics' own modules (stats/metrics/) write a metric's name in a
    comparison. A module that compares names breaks for a metric added with register()."""
    from distgate.stats.metrics.registry import METRICS

    deciding = {
        name
        for name, path in modules().items()
        if not name.startswith("distgate.stats.metrics")
        and metric_name_decisions(_parsed(path), set(METRICS))
    }
    assert deciding == set()


def calls(tree: ast.AST, function: str) -> list[ast.Call]:
    """The calls of ``function`` (by its plain or dotted name) in ``tree``."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            getattr(node.func, "id", None) == function
            or getattr(node.func, "attr", None) == function
        )
    ]


def test_the_default_critical_value_store_is_made_in_one_place():
    """Every command takes its critical values from data.cache.cached_critical_values, the
    one place that builds the default store (the cache folder in front of the shipped
    tables): no other module calls default_store() or gives CriticalValues a store of its
    own (stats.critical passes its own on to the values it derives)."""
    made = {
        name: len(calls(_parsed(path), "default_store"))
        for name, path in modules().items()
        if calls(_parsed(path), "default_store")
    }
    assert made == {"distgate.data.cache": 1}
    stored = {
        name
        for name, path in modules().items()
        for call in calls(_parsed(path), "CriticalValues")
        if any(keyword.arg == "store" for keyword in call.keywords)
    }
    assert stored == {"distgate.data.cache", "distgate.stats.critical"}


# the library's rooms that a command reaches only through the Python API
LIBRARY = (
    "distgate.release",
    "distgate.randomization",
    "distgate.gate",
    "distgate.state",
    "distgate.workflows",
    "distgate.stats.calibration",
)
READING = ("distgate.data.inputs", "distgate.data.config", "distgate.data.contingency")


@pytest.mark.parametrize(
    "command",
    [
        "assess",
        "baseline",
        "audit",
        "randomize",
        "calibrate",
        "replay",
        "simulate",
        "serve",
        "state",
    ],
)
def test_a_command_is_one_call_of_the_python_api(command):
    """The command parses its options, calls its distgate function and renders what it
    returns: it neither reads the table nor assembles the library's calls itself."""
    targets = package_graph()[f"distgate.cli.{command}"]
    assert "distgate.api" in targets
    assert sorted(t for t in targets if t.startswith(LIBRARY + READING)) == []


def test_no_library_module_imports_the_api_or_the_command_line():
    """Only the package's entry points (``distgate.assess`` reached lazily, ``python -m
    distgate``) and the command line itself stand above the library."""
    above = ("distgate.api", "distgate.cli")
    entries = ("distgate", "distgate.__main__")
    wrong = [
        (name, target)
        for name, targets in package_graph().items()
        if not name.startswith(above) and name not in entries
        for target in targets
        if target.startswith(above)
    ]
    assert wrong == []


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
