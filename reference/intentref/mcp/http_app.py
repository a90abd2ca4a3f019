"""Streamable HTTP: the ASGI app serving the tools at ``/mcp`` in both eras, and the Bridge session of each call.

Which session a call runs in (D-MCP-002, D-MCP-003; with authorization, one per principal,
D-MCP-031), who its client is for the fair share (D-MCP-025, D-MCP-026), and what guards
every request before the SDK sees it (D-MCP-010, D-MCP-022; the SDK's bearer middleware,
D-MCP-033; the rate limit, D-MCP-034).  The app runs under any ASGI server; ``intentref.mcp.server``
serves it with uvicorn.

Decisions taken here are ``D-MCP-...`` in ``spec/decisions-mcp.md``.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from mcp.server import Server
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware

from intentref.mcp.adapter import Bridge, ExtraTool, ToolSession, build_intent_mcp_server, close_session
from intentref.mcp.auth import principal_of
from intentref.mcp.capacity import (
    DEFAULT_CALLS_PER_SECOND,
    DEFAULT_JOB_IDLE_SECONDS,
    Client,
    FairShare,
    JobLedger,
    principal_client,
    session_client,
    stateless_client,
)
from intentref.mcp.http_guard import (
    DEFAULT_BODY_TIMEOUT,
    BodyBudget,
    CallRateLimit,
    CallRates,
    RequestGuard,
)

MCP_PATH: Final = "/mcp"
# D-MCP-009: large enough that an oversized candidate (the core caps one at 1 MiB) still
# reaches the Bridge and gets its LIMIT_EXCEEDED reply; beyond this the transport says 413.
DEFAULT_MAX_REQUEST_BODY_SIZE: Final = 16 * 1024 * 1024
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")

_SESSION_KEY: Final = "intentref.bridge_session"
# D-LIM-009: the 2026-07-28 era's Bridge sessions kept for principals (D-MCP-031) before those
# holding no active job are closed, least recently used first.
MAX_PRINCIPAL_SESSIONS: Final = 10_000


def _connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    # The SDK documents Connection.state / exit_stack for per-connection resources but the
    # low-level handler context does not expose the Connection yet (its TODO L54); this is
    # the one place that reaches for it, and the HTTP tests fail loudly if it moves.
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError("the installed mcp SDK no longer exposes the request's Connection")
    return connection


class _HttpSessions:
    """Bridge sessions of one streamable-HTTP app.

    Handshake era: one session per MCP session (Mcp-Session-Id), closed when the SDK
    ends that session -- DELETE, idle timeout or shutdown (D-MCP-002).  2026-07-28 era:
    requests carry no session at all, so one shared session owns their jobs (D-MCP-003).
    """

    def __init__(self, bridge: Bridge, ledger: JobLedger) -> None:
        self._bridge = bridge
        self._stateless: ToolSession | None = None
        # 2026-07-28 era with authorization (D-MCP-031), least recently used first
        self._principals: OrderedDict[str, ToolSession] = OrderedDict()
        self.ledger = ledger

    def owner(self, ctx: ServerRequestContext[Any], session: ToolSession) -> Client:
        """The client a call counts against (D-MCP-026).

        Handshake era: its MCP session.  2026-07-28 era: the TCP peer's address (uvicorn is
        told not to rewrite it from forwarded headers) with the clientInfo the request's
        ``_meta`` declares, which the SDK has read into the request's connection.  With
        authorization, in both eras: the verified principal (D-MCP-031).
        """
        if (principal := principal_of(getattr(ctx.request, "scope", {}))) is not None:
            return principal_client(principal)
        if session is not self._stateless:
            return session_client(session)
        peer = getattr(ctx.request, "client", None)
        params = ctx.session.client_params
        info = None if params is None else (params.client_info.name, params.client_info.version)
        return stateless_client(getattr(peer, "host", None), info)

    def resolve(self, ctx: ServerRequestContext[Any]) -> ToolSession:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if (principal := principal_of(getattr(ctx.request, "scope", {}))) is not None:
                # D-MCP-031: each principal's jobs live in its own Bridge session, so another
                # principal's jobId reaches nothing there, whichever of its clients sends it.
                if principal not in self._principals:
                    self._forget_idle_principals()
                    self._principals[principal] = self._bridge.connect()
                self._principals.move_to_end(principal)
                return self._principals[principal]
            if self._stateless is None:
                self._stateless = self._bridge.connect()
            return self._stateless
        connection = _connection_of(ctx)
        session: ToolSession | None = connection.state.get(_SESSION_KEY)
        if session is None:
            session = self._bridge.connect()
            connection.state[_SESSION_KEY] = session
            connection.exit_stack.callback(close_session, session)  # spec: R-LIF-012
            connection.exit_stack.callback(self.ledger.forget_session, session)
        return session

    def _forget_idle_principals(self) -> None:
        """D-LIM-009: at the bound, close the sessions of principals holding no active job.  What
        goes is only their finished jobs' replies; one holding a job stays, and the fair share
        bounds those (D-MCP-025)."""
        if len(self._principals) < MAX_PRINCIPAL_SESSIONS:
            return
        for principal in list(self._principals):
            if self.ledger.held_by(principal_client(principal)) == 0:
                close_session(self._principals.pop(principal))
            if len(self._principals) < MAX_PRINCIPAL_SESSIONS // 2:
                return

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            session, self._stateless = self._stateless, None
            close_session(session)
            for principal in list(self._principals):
                close_session(self._principals.pop(principal))


def url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def _security(
    host: str, allowed_hosts: list[str] | None, allowed_origins: list[str] | None
) -> TransportSecuritySettings:
    """DNS-rebinding protection, always on (D-MCP-010)."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in (*LOOPBACK_HOSTS, "0.0.0.0", "::", ""):
        hosts.append(f"{url_host(host)}:*")
        origins.append(f"http://{url_host(host)}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + list(allowed_hosts or ()),
        allowed_origins=origins + list(allowed_origins or ()),
    )


def create_intent_mcp_http_app(
    bridge: Bridge,
    *,
    host: str = "127.0.0.1",
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    max_request_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    max_jobs_per_client: int | None = None,
    job_idle_seconds: float | None = DEFAULT_JOB_IDLE_SECONDS,
    body_budget: BodyBudget | None = None,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    extra_tools: Sequence[ExtraTool] = (),
    max_calls_per_second: int | None = DEFAULT_CALLS_PER_SECOND,
    token_verifier: TokenVerifier | None = None,
    resource_url: str | None = None,
    auth_issuer: str | None = None,
) -> Starlette:
    """A Starlette app serving MCP_TOOLS at ``/mcp`` in both eras, for any ASGI server.

    Its lifespan must run (it starts the SDK's session manager).  The Bridge stays the
    caller's to close, after the app has shut down.  The fair share (D-MCP-025) follows the
    Bridge's size: ``max_jobs_per_client`` may lower the per-client limit from half the
    Bridge's job slots (None), never raise it (ValueError); ``job_idle_seconds`` reclaims
    jobs without progress (D-MCP-021; None: never).  ``body_budget`` and ``body_timeout``
    bound request bodies in flight (D-MCP-022, D-MCP-023).  ``max_calls_per_second`` rate-limits
    each caller's tool calls (D-MCP-034; None: no limit).  With a ``token_verifier`` every
    request needs a bearer token it accepts, and ``resource_url`` (this endpoint as clients
    reach it) is what the protected-resource metadata describes, naming ``auth_issuer`` as
    the authorization server (D-MCP-030, D-MCP-033).
    """
    slots = min(bridge.options.max_jobs, bridge.options.max_replay_entries)  # active jobs fill either
    share = FairShare.of(slots, max_jobs_per_client)
    sessions = _HttpSessions(bridge, JobLedger(share, lambda: bridge.stats()["activeJobs"], job_idle_seconds))
    server = build_intent_mcp_server(
        sessions.resolve,
        extra_tools=extra_tools,
        lifespan=sessions.lifespan,
        ledger=sessions.ledger,
        owner_of=sessions.owner,
    )
    security = _security(host, allowed_hosts, allowed_origins)
    auth = None
    if token_verifier is not None:
        if resource_url is None:
            raise ValueError("a token_verifier needs the resource_url its metadata describes")
        # D-MCP-033: with static tokens there is no authorization server; the metadata must
        # name one, so it names this server's origin, where no OAuth metadata is served.
        issuer = auth_issuer or resource_url.removesuffix(MCP_PATH)
        # The verifiers check the audience themselves (D-MCP-032), hence no resource check here.
        auth = AuthSettings(
            issuer_url=AnyHttpUrl(issuer), resource_server_url=AnyHttpUrl(resource_url), validate_token_resource=False
        )
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        max_request_body_size=max_request_body_size,
        host=host,
        auth=auth,
        token_verifier=token_verifier,
    )
    if max_calls_per_second:
        # Innermost, behind the SDK's bearer middleware: the caller is the verified principal.
        app.user_middleware.append(
            Middleware(CallRateLimit, rates=CallRates(max_calls_per_second), authorized=auth is not None)
        )
    # D-MCP-022: in front of everything the SDK does, so Host/Origin are judged on the
    # headers and the body is read once, timed and budgeted.
    app.state.intent_session_manager = server.session_manager  # ending sessions quickly (D-MCP-023)
    app.add_middleware(
        RequestGuard,
        security=security,
        max_body_size=max_request_body_size,
        budget=body_budget or BodyBudget(),
        body_timeout=body_timeout,
    )
    return app
