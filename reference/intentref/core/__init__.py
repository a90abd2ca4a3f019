"""The protocol's rules, pure: no IO, no network, no processes, no clock beyond what a rule names.

What lives here: the request and schema-subset checks, the core and data candidate checks,
the job's state machine and the tasks it sets, JSON text and JSON Pointer, text rules, the
named limits, the error model, the instructions, the writer that writes tasks and errors, the
wire models and the decisions' ``Policy`` — each rule in the seeds' order, one module per concern.

What it may import: the standard library, pydantic and jsonschema (with their format
checkers), and other modules of ``intentref.core``.  Never ``intentref.intent``,
``intentref.bridge``, ``intentref.mcp``, ``intentref.suite``, ``intentref.devtools`` or
the package root (tests/spec/test_layers.py enforces this).
"""
