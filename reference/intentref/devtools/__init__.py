"""The project's own tools, on top of everything: benchmarks, the soak run, mutation testing.

What lives here: ``bench`` (``intentref bench``) and the families it collects
(``bench_bridge``, ``bench_mcp``, ``bench_conformance``, ``soak``), their shared
``figure`` and ``examples``, and ``mutation`` (``intentref mutation``).

What it may import: every layer below (``intentref.core``, ``intentref.intent``,
``intentref.bridge``, ``intentref.mcp``, ``intentref.suite``) and its own modules.  Only
``intentref.cli`` imports it (tests/spec/test_layers.py enforces the order).
"""
