"""The conformance suite's engine: what other implementations run against themselves.

What lives here: ``conformance`` (fixtures, targets, runner, reports, the pytest plugin),
the properties engine (``_property_targets``, ``_projection``, ``_reference_replies``),
the generators behind ``intentref.strategies`` (``_strategies_impl``; the pieces a property
drives a target with are published as ``intentref.properties``), ``fuzz``,
``check`` and ``properties_cli``.

What it may import: anything below it — ``intentref.core``, ``intentref.intent``,
``intentref.bridge``, ``intentref.mcp``, the package root and ``intentref._paths`` — and
its own modules; never ``intentref.devtools`` or ``intentref.cli``
(tests/spec/test_layers.py enforces this).
"""
