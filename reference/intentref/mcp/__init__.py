"""The MCP layer: the reference server over stdio and HTTP, its transport and its CLI.

What lives here: ``server`` (the MCP tools over a Bridge, and the public API that builds
and serves them), ``replies`` (what a BridgeReply is to the adapter, and the error replies it
writes itself), ``stdio`` and ``_fdio`` (the stdio transport), ``http_guard`` (the HTTP
checks), ``capacity`` (who a client is and its fair share of the Bridge) and ``cli`` (the
``intent-runtime-mcp`` command).

What it may import: the MCP SDK, starlette, uvicorn, anyio, ``intentref.core``,
``intentref.intent``, ``intentref.bridge`` and other modules of ``intentref.mcp``; never
``intentref.suite`` or ``intentref.devtools`` (tests/spec/test_layers.py enforces this).
"""
