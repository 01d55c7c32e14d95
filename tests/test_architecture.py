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


@functools.cache  # (parsed once: each test of this module reads the same files)
def package_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) for name, path in known.items()}


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


def test_the_gate_is_driven_through_its_session_only():
    """replay, simulate, serve, the state checks and the release models all decide through
    distgate.gate.session.GateSession, so the compiled kernel has one caller: no other
    module of the package builds a Gate (the package's own __init__ names it for users)."""
    importers = {
        name
        for name, targets in package_graph().items()
        if "distgate.gate.core" in targets or (name != "distgate.gate" and _names_gate(name))
    }
    assert importers == {"distgate.gate", "distgate.gate.session"}
    kernel_users = {
        name
        for name, targets in package_graph().items()
        if not name.startswith("distgate.gate.kernel")
        and any(
            t == "distgate.gate.kernel" or t.startswith("distgate.gate.kernel.") for t in targets
        )
    }
    assert kernel_users == {"distgate.gate.compiled"}


def _names_gate(module: str) -> bool:
    """Whether a module imports ``Gate`` from the gate package itself."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "distgate.gate"
        and any(alias.name == "Gate" for alias in node.names)
        for node in ast.walk(_parsed(modules()[module]))
    )


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
    "distgate.stats.calibration",
)
READING = ("distgate.data.inputs", "distgate.data.config", "distgate.data.contingency")


@pytest.mark.parametrize("command", ["assess", "baseline", "audit", "randomize", "calibrate"])
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
