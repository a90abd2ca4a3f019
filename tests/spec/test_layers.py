"""The package's layers: imports point only down, and no two modules import each other.

The order, bottom to top (issue 18; each package's docstring says the same):

    0 core      intentref.core.*, intentref._paths,     the rules, pure
                intentref._version
    1 api       intentref.intent, intentref.bridge        the API path and the Bridge
    2 mcp       intentref.mcp.*                           the MCP server
    3 root      intentref (the package root)              re-exports the API and the MCP server
    4 suite     intentref.suite.*, intentref.strategies,  the conformance suite's engine and
                intentref.properties,                     its public paths
                intentref.conformance.*
    5 devtools  intentref.devtools.*, intentref.cli        the project's tools, the command line

A module may import from its own layer or any layer below, never above; every import
counts, the ones inside functions too (they run the same code, only later).

Hand-written rather than import-linter: the check is forty lines of ``ast`` over our own
files, it needs no extra dependency in the test extra, and it also checks the lazy
imports inside functions, which is where both circles issue 18 removed were hiding.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import pathlib
import subprocess
import sys

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "reference" / "intentref"

LAYER_NAMES = ("core", "api", "mcp", "root", "suite", "devtools")

# The first matching prefix decides; "intentref" alone is the package root.
_LAYER_OF_PREFIX: tuple[tuple[str, int], ...] = (
    ("intentref.core", 0),
    ("intentref._paths", 0),
    ("intentref._version", 0),
    ("intentref.intent", 1),
    ("intentref.bridge", 1),
    ("intentref.bridge_store", 1),
    ("intentref.mcp", 2),
    ("intentref.suite", 4),
    ("intentref.strategies", 4),
    ("intentref.properties", 4),
    ("intentref.conformance", 4),
    ("intentref.devtools", 5),
    ("intentref.cli", 5),
)


def layer_of(module: str) -> int:
    if module == "intentref":
        # The root re-exports serve_intent_mcp, so it sits above the MCP layer: an mcp module
        # importing the root would be an arrow back up (issue 35 mended the last one).
        return 3
    for prefix, layer in _LAYER_OF_PREFIX:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise LookupError(f"{module} is in no layer: add it to tests/spec/test_layers.py and to a package")


def package_modules(package_dir: pathlib.Path = PACKAGE_DIR) -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def intentref_imports(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The intentref modules ``source`` (the text of ``module``) imports, anywhere in it."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "intentref")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            if origin.split(".")[0] != "intentref":
                continue
            # `from intentref.mcp import server` imports the module intentref.mcp.server.
            submodules = {f"{origin}.{alias.name}" for alias in node.names} & known
            found.update(submodules or {origin})
    found.discard(module)
    return found


def import_graph(modules: dict[str, pathlib.Path]) -> dict[str, set[str]]:
    known = set(modules)
    return {
        name: intentref_imports(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
        for name, path in modules.items()
    }


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({LAYER_NAMES[layer_of(module)]}) imports {target} ({LAYER_NAMES[layer_of(target)]})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


# --------------------------------------------------------------------------- the package itself


def test_every_module_is_in_a_layer() -> None:
    modules = package_modules()
    assert len(modules) > 50  # the walk found the package, not an empty folder
    for module in modules:
        layer_of(module)  # raises for a module outside every layer


def test_imports_only_point_down() -> None:
    assert upward_imports(import_graph(package_modules())) == []


# Circles inside one package that were there before issue 18, each through a lazy import
# inside a function (so import order never breaks); untangling them changes code the issue
# kept out of a pure move.  Listed so that a new circle fails, and so that removing one
# fails until it is struck from this list.  The two circles issue 18 named (bench with its
# figure families; the property catalog with the generators) and the package root with
# the MCP server are gone and may not come back.
KNOWN_CIRCLES: list[list[str]] = []  # every circle is broken; a new one fails the test


def test_no_new_circle() -> None:
    assert sorted(circles(import_graph(package_modules()))) == sorted(KNOWN_CIRCLES)


def test_the_circles_issue_18_broke_stay_broken() -> None:
    graph = import_graph(package_modules())
    bench_family = {"intentref.devtools.bench_bridge", "intentref.devtools.bench_mcp", "intentref.devtools.soak",
                    "intentref.devtools.bench_conformance"}  # fmt: skip
    assert not any("intentref.devtools.bench" in graph[module] for module in bench_family)
    assert not {m for g, ms in graph.items() if g.startswith("intentref.suite.generators.") for m in ms if ".properties" in m}
    assert "intentref" not in graph["intentref.mcp.server"]


def test_each_layer_package_says_what_it_may_import() -> None:
    for package in ("core", "mcp", "suite", "devtools", "conformance"):
        doc = ast.get_docstring(ast.parse((PACKAGE_DIR / package / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc, package


# --------------------------------------------------------------------------- the checker on synthetic sources


_SYNTHETIC_KNOWN = {"intentref.core.text", "intentref.core.errors", "intentref.mcp.server", "intentref.devtools.bench",
                    "intentref.suite.commands.fuzz", "intentref.bridge"}  # fmt: skip


@pytest.mark.parametrize(
    ("module", "is_package", "source", "target"),
    [
        ("intentref.core.text", False, "from intentref.mcp import server\n", "intentref.mcp.server"),
        ("intentref.core.text", False, "def later():\n    from ..bridge import X\n", "intentref.bridge"),
        ("intentref.suite.commands.fuzz", False, "import intentref.devtools.bench\n", "intentref.devtools.bench"),
        ("intentref.core", True, "from .. import serve_intent_mcp\n", "intentref"),
        ("intentref.mcp.cli", False, "from intentref import Intent\n", "intentref"),
    ],
)
def test_the_checker_catches_an_upward_import(module: str, is_package: bool, source: str, target: str) -> None:
    found = intentref_imports(source, module, is_package, _SYNTHETIC_KNOWN)
    assert found == {target}
    assert upward_imports({module: found}) == [
        f"{module} ({LAYER_NAMES[layer_of(module)]}) imports {target} ({LAYER_NAMES[layer_of(target)]})"
    ]


def test_the_checker_lets_a_downward_import_pass() -> None:
    found = intentref_imports("from intentref.core import errors\nfrom . import text\n", "intentref.core.job",
                              False, _SYNTHETIC_KNOWN)  # fmt: skip
    assert found == {"intentref.core.errors", "intentref.core.text"}
    assert upward_imports({"intentref.core.job": found}) == []


def test_the_checker_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_a_module_outside_every_layer_is_refused() -> None:
    with pytest.raises(LookupError):
        layer_of("intentref.somewhere_new")


# --------------------------------------------------------------------------- the paths users import keep working


def test_the_public_names_stay_where_users_import_them() -> None:
    import intentref
    from intentref.bridge import create_intent_bridge
    from intentref.mcp.server import serve_intent_mcp

    assert intentref.create_intent_bridge is create_intent_bridge
    assert intentref.serve_intent_mcp is serve_intent_mcp
    assert intentref.Intent.__module__ == "intentref.intent"
    strategies = importlib.import_module("intentref.strategies")
    assert callable(strategies.requests) and callable(strategies.broken_candidates)
    # What a property drives a target with is published beside the strategies (issue 23).
    properties = importlib.import_module("intentref.properties")
    from intentref.suite.properties.targets import Example

    assert properties.Example is Example and callable(properties.decided)


def test_the_plugin_keeps_its_published_path() -> None:
    published = importlib.import_module("intentref.conformance.pytest_plugin")
    engine = importlib.import_module("intentref.suite.pytest_plugin")
    hooks = [name for name in dir(engine) if name.startswith("pytest_")]
    assert hooks and all(getattr(published, name) is getattr(engine, name) for name in hooks)
    assert published._intentref_executor is engine._intentref_executor
    plugin = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert plugin["intentref"] == "intentref.conformance.pytest_plugin"


def test_the_console_scripts_resolve() -> None:
    scripts = {ep.name: ep for ep in importlib.metadata.entry_points(group="console_scripts")}
    assert callable(scripts["intentref"].load())
    assert callable(scripts["intent-runtime-mcp"].load())


def test_python_dash_m_intentref_cli_still_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "intentref.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "conformance" in done.stdout


# --------------------------------------------------------------------------- inside the suite

# The suite's subpackages, bottom up, as intentref/suite/__init__.py lists them: each may import
# the ones before it, never one after (issue 35). ``targets.registry`` alone reaches up, to
# ``alterations``, for the bundled variant and faulty kinds; it is the one exception.
SUITE_ORDER = ("usage", "targets", "cases", "alterations", "execution", "reports", "generators", "properties",
               "host", "commands", "pytest_plugin")  # fmt: skip
SUITE_EXCEPTIONS = {("intentref.suite.targets.registry", "alterations")}


def suite_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["intentref", "suite"] else None


def upward_suite_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        part = suite_part(module)
        for target in targets:
            other = suite_part(target)
            if part is None or other is None or other == part or (module, other) in SUITE_EXCEPTIONS:
                continue
            if SUITE_ORDER.index(other) > SUITE_ORDER.index(part):
                found.append(f"{module} ({part}) imports {target} ({other})")
    return sorted(found)


def test_the_suites_subpackages_import_only_those_below_them() -> None:
    modules = package_modules()
    parts = {suite_part(name) for name in modules} - {None}
    assert parts == set(SUITE_ORDER), f"a subpackage of the suite missing from SUITE_ORDER: {parts ^ set(SUITE_ORDER)}"
    assert upward_suite_imports(import_graph(modules)) == []


def test_the_suite_order_check_catches_an_import_up() -> None:
    graph = {"intentref.suite.cases.script": {"intentref.suite.reports.console"},
             "intentref.suite.targets.registry": {"intentref.suite.alterations.variants"}}  # fmt: skip
    assert upward_suite_imports(graph) == [
        "intentref.suite.cases.script (cases) imports intentref.suite.reports.console (reports)"]


def test_the_suite_docstring_lists_the_subpackages_in_this_order() -> None:
    doc = (PACKAGE_DIR / "suite" / "__init__.py").read_text("utf-8")
    listed = [line.split("``")[1] for line in doc.splitlines() if line.startswith("``")]
    assert [p for p in listed if p in SUITE_ORDER] == [p for p in SUITE_ORDER if p in listed]
    assert set(SUITE_ORDER) <= set(listed), sorted(set(SUITE_ORDER) - set(listed))
