"""An outside ``intent-runtime-mcp`` on streamable HTTP that requires a bearer token.

    TOKEN_SERVER_TOKEN=SECRET python tests/outside/token_server.py --config FILE

Prints ``url URL`` on stdout once it listens, then serves until SIGTERM or SIGINT.

Built as an outside implementer protects a server with the official MCP Python SDK: the tools
of ``plain_sdk_server.py`` on the SDK's low-level ``Server``, its ``streamable_http_app`` given
``AuthSettings`` and a ``TokenVerifier``, so the SDK's own ``BearerAuthBackend`` and
``RequireAuthMiddleware`` answer a request without the token 401 with ``WWW-Authenticate``.
The one token is read from the environment and compared in constant time.  Every client
shares one Bridge session, as the 2026-07-28 era's clients do (D-MCP-003).  It is served as
``embedded_http_server.py`` serves the reference's app.  It is not part of the package.
"""

from __future__ import annotations

import asyncio
import hmac
import os
from typing import Any

from embedded_http_server import serve
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from plain_sdk_server import build_server


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` protocol over one token known in advance."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self._token):
            return None
        return AccessToken(token=token, client_id="token-server-client", scopes=[])


def guarded_app(bridge: Any, url: str) -> Any:
    """The plain SDK server's tools on one Bridge session, behind the SDK's bearer middleware."""
    auth = AuthSettings(issuer_url="https://auth.example", resource_server_url=url, validate_token_resource=False)
    verifier = StaticTokenVerifier(os.environ["TOKEN_SERVER_TOKEN"])
    return build_server(bridge.connect()).streamable_http_app(auth=auth, token_verifier=verifier)


if __name__ == "__main__":
    asyncio.run(serve(guarded_app))
