"""The decisions in force are given, never looked up (issue 23).

An ``Intent``, a ``Job``, a schema ``Definition`` and a Bridge are built with their
``Policy`` (``intentref.core.policy``) and keep it.  So the production layers — the core,
the API path, the Bridge and the MCP adapter — must not learn which decisions apply from
anything ambient: no context variable, no ``global`` rebinding, and the reference's policy
named only as a default (of a parameter or a field) or in a comparison, never read inside
a body where the object's own policy belongs.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "reference" / "intentref"
PRODUCTION = sorted(
    [*(PACKAGE_DIR / "core").glob("*.py"), *(PACKAGE_DIR / "mcp").glob("*.py"),
     PACKAGE_DIR / "intent.py", PACKAGE_DIR / "bridge.py", PACKAGE_DIR / "bridge_store.py"]
)  # fmt: skip


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _as_default(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``node`` is a parameter default, a class field's default, or compared by identity or equality."""
    parent = parents.get(node)
    if isinstance(parent, ast.Compare) and all(isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) for op in parent.ops):
        return True
    child = node
    while parent is not None:
        if isinstance(parent, ast.arguments):
            return child in parent.defaults or child in parent.kw_defaults
        if isinstance(parent, ast.AnnAssign) and child is parent.value:
            return isinstance(parents.get(parent), ast.ClassDef)
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            return False
        child, parent = parent, parents.get(parent)
    return False


def ambient_lookups(source: str) -> list[str]:
    """Every way ``source`` could learn its decisions from ambient state, one line each."""
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "contextvars" for a in node.names):
            found.append(f"line {node.lineno}: imports contextvars")
        elif isinstance(node, ast.ImportFrom) and node.module == "contextvars":
            found.append(f"line {node.lineno}: imports from contextvars")
        elif isinstance(node, ast.Global):
            found.append(f"line {node.lineno}: rebinds a global ({', '.join(node.names)})")
        elif (isinstance(node, ast.Name) and node.id == "REFERENCE_POLICY" and isinstance(node.ctx, ast.Load)
              and not _as_default(node, parents)):  # fmt: skip
            found.append(f"line {node.lineno}: reads REFERENCE_POLICY instead of the policy it was given")
    return found


@pytest.mark.parametrize("path", PRODUCTION, ids=lambda p: str(p.relative_to(PACKAGE_DIR)))
def test_production_modules_take_their_policy_as_given(path: pathlib.Path) -> None:
    assert ambient_lookups(path.read_text("utf-8")) == []


def test_the_scan_covers_the_policy_and_its_readers() -> None:
    names = {str(p.relative_to(PACKAGE_DIR)) for p in PRODUCTION}
    assert {"core/policy.py", "core/job.py", "bridge.py", "bridge_store.py", "intent.py", "mcp/server.py"} <= names


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import contextvars\n", "imports contextvars"),
        ("from contextvars import ContextVar\n", "imports from contextvars"),
        ("X = 1\ndef f():\n    global X\n    X = 2\n", "rebinds a global"),
        ("def f(text):\n    return len(text) > REFERENCE_POLICY.max_input_bytes\n", "reads REFERENCE_POLICY"),
        ("LIMIT = REFERENCE_POLICY.max_input_bytes\n", "reads REFERENCE_POLICY"),
    ],
)
def test_the_check_finds_each_ambient_lookup(source: str, expected: str) -> None:
    assert any(expected in line for line in ambient_lookups(source))


@pytest.mark.parametrize(
    "source",
    [
        "def f(text, policy=REFERENCE_POLICY):\n    return policy.max_input_bytes\n",
        "def f(text, *, policy=REFERENCE_POLICY):\n    return policy\n",
        "class D:\n    policy: Policy = REFERENCE_POLICY\n",
        "def f(policy):\n    return policy is REFERENCE_POLICY\n",
    ],
)
def test_the_check_lets_a_default_pass(source: str) -> None:
    assert ambient_lookups(source) == []
