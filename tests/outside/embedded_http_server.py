"""The reference's ASGI app served by an embedder's own uvicorn, on a socket the embedder bound.

    python tests/outside/embedded_http_server.py --config FILE

Prints ``url URL`` on stdout once it listens, then serves until SIGTERM or SIGINT.

This is how a program that embeds the reference over HTTP may serve it: it builds the app
with ``create_intent_mcp_http_app`` and hands uvicorn a socket it bound itself with
``socket.create_server`` (to learn a free port first, as here, or from a supervisor), instead
of calling ``serve_intent_mcp_http``.  Such a socket's connections keep Nagle's algorithm on:
asyncio sets ``TCP_NODELAY`` only on sockets made with ``IPPROTO_TCP``, and nothing here sets
it (the reference's own server does, D-MCP-029).  Replies to a client that keeps its connection
alive then wait for a delayed ACK; the conformance runner must notice and connect otherwise
(D-CNF-056).  It is not part of the package.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from intentref import Intent, create_intent_bridge
from intentref.mcp.server import create_intent_mcp_http_app


async def serve(app_of: Callable[[Any, str], Any]) -> None:
    """Serve ``app_of(bridge, url)`` at ``url`` until stopped, the Bridge made from ``--config``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    document = json.loads(Path(args.config).read_text("utf-8"))
    instances = {name: Intent(config) for name, config in document["instances"].items()}
    bridge = create_intent_bridge({"instances": instances})
    sock = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server = uvicorn.Server(uvicorn.Config(app_of(bridge, url), log_config=None, access_log=False, lifespan="on"))
    print(f"url {url}", flush=True)
    try:
        await server.serve(sockets=[sock])
    finally:
        bridge.close()
        for intent in instances.values():
            intent.dispose()


if __name__ == "__main__":
    asyncio.run(serve(lambda bridge, url: create_intent_mcp_http_app(bridge)))
