"""An outside ``intent-runtime-mcp`` on streamable HTTP that requires a bearer token.

    TOKEN_SERVER_TOKEN=SECRET python tests/outside/token_server.py --config FILE

Prints ``url URL`` on stdout once it listens, then serves until SIGTERM or SIGINT.

Built as an outside implementer protects a server with the official MCP Python SDK: the tools
of ``plain_sdk_server.py`` on the SDK's low-level ``Server``, its ``streamable_http_app`` given
``AuthSettings`` and a ``TokenVerifier``, so the SDK's own ``BearerAuthBackend`` and
``RequireAuthMiddleware`` answer a request without the token 401 with ``WWW-Authenticate``.
The one token is read from the environment and compared in constant time.  Every client
shares one Bridge session, as the 2026-07-28 era's clients do (D-MCP-003).  It is not part of
the package.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import os
import socket
from pathlib import Path

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from plain_sdk_server import build_server

from intentref import Intent, create_intent_bridge


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` protocol over one token known in advance."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self._token.encode()):
            return None
        return AccessToken(token=token, client_id="token-server-client", scopes=[])


async def main() -> None:
    parser = argparse.ArgumentParser(prog="token-server")
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    document = json.loads(Path(args.config).read_text("utf-8"))
    instances = {name: Intent(config) for name, config in document["instances"].items()}
    bridge = create_intent_bridge({"instances": instances})
    session = bridge.connect()
    sock = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    auth = AuthSettings(issuer_url="https://auth.example", resource_server_url=url, validate_token_resource=False)
    app = build_server(session).streamable_http_app(auth=auth, token_verifier=StaticTokenVerifier(os.environ["TOKEN_SERVER_TOKEN"]))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    print(f"url {url}", flush=True)
    try:
        await server.serve(sockets=[sock])
    finally:
        session.close()
        bridge.close()
        for intent in instances.values():
            intent.dispose()


if __name__ == "__main__":
    asyncio.run(main())
