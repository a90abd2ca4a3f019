"""The MCP layer: the reference server over stdio and HTTP, its transport and its CLI.

What lives here: ``server`` (the public API that builds and serves the tools, and every
name a program imports), ``tools`` (the tools' declarations and the instructions),
``adapter`` (one call to one BridgeReply in its envelope, and the SDK server),
``http_app`` (the streamable-HTTP app and each call's Bridge session), ``replies`` (what a
BridgeReply is to the adapter, and the error replies it writes itself), ``stdio`` and
``_fdio`` (the stdio transport), ``http_guard`` (the HTTP checks), ``capacity`` (who a
client is and its fair share of the Bridge) and ``cli`` (the ``intent-runtime-mcp`` command).

What it may import: the MCP SDK, starlette, uvicorn, anyio, ``intentref.core``,
``intentref._version``, ``intentref.intent``, ``intentref.bridge`` and other modules of
``intentref.mcp``; never the package root (it re-exports the server), ``intentref.suite``
or ``intentref.devtools`` (tests/spec/test_layers.py enforces this).
"""
