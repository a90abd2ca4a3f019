"""Authorization and rate-limit options on the command line, and whom a tool call counts against.

spec: D-MCP-030, D-MCP-032, D-MCP-035 (mistakes are one line and status 2, found before the
configuration is read or anything is bound), D-MCP-034 and D-LIM-007/008 (the callers'
buckets).  The command-line cases run the real console script; none of them serves.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import anyio
import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from intentref.mcp.auth import StaticTokens
from intentref.mcp.capacity import CALL_BURST_SECONDS
from intentref.mcp.http_guard import MAX_TRACKED_CALLERS, CallRates, _caller
from mcp_support import run_cli

DIGEST = hashlib.sha256(b"secret").hexdigest()
TOKEN_FILES = [
    ("{", "", "not JSON"),
    ("[]", "", "nothing else"),
    (json.dumps({"tokens": []}), "/tokens", "no tokens"),
    (json.dumps({"tokens": [{"principal": "a", "sha256": DIGEST}], "more": 1}), "", "nothing else"),
    (json.dumps({"tokens": [{"principal": "a"}]}), "/tokens/0", "nothing else"),
    (json.dumps({"tokens": [{"principal": "", "sha256": DIGEST}]}), "/tokens/0/principal", "non-empty"),
    (json.dumps({"tokens": [{"principal": "a", "sha256": "secret"}]}), "/tokens/0/sha256", "64 hexadecimal"),
    (json.dumps({"tokens": [{"principal": "a", "sha256": DIGEST}, {"principal": "b", "sha256": DIGEST.upper()}]}),
     "/tokens/1/sha256", "already listed"),
]  # fmt: skip


def one_line(done: object, status: int = 2) -> str:
    stderr = done.stderr.decode()  # type: ignore[attr-defined]
    assert done.returncode == status, stderr  # type: ignore[attr-defined]
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    return stderr


@pytest.mark.parametrize(("content", "pointer", "says"), TOKEN_FILES)
def test_a_malformed_token_file_is_one_line_before_serving(tmp_path: Path, content: str, pointer: str, says: str) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(content, encoding="utf-8")
    # The configuration does not exist: the token file is judged first, and nothing is served.
    stderr = one_line(run_cli("--config", "/nonexistent.json", "--http", "127.0.0.1:0", "--auth-tokens", str(tokens)))
    assert stderr.startswith(f"intent-runtime-mcp: configuration fault: {tokens}#{pointer}: CONFIG_INVALID: "), stderr
    assert says in stderr and "secret" not in stderr


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--http", "127.0.0.1:0", "--auth-jwks", "keys.json"], "--auth-jwks needs --auth-issuer URL and --auth-audience"),
        (["--http", "127.0.0.1:0", "--auth-jwks", "k", "--auth-issuer", "https://i.example"], "--auth-jwks needs"),
        (["--http", "127.0.0.1:0", "--auth-issuer", "https://i.example"], "--auth-issuer applies to --auth-jwks only"),
        (["--http", "127.0.0.1:0", "--auth-resource", "https://i.example/mcp"], "--auth-resource applies with"),
        (["--http", "127.0.0.1:0", "--auth-audience", "a"], "--auth-audience applies to --auth-jwks only"),
        (["--http", "127.0.0.1:0", "--auth-jwks", "k", "--auth-issuer", "issuer"], "expected an http:// or https:// URL"),
        (["--http", "127.0.0.1:0", "--auth-tokens", "t", "--auth-jwks", "k"], "not allowed with argument"),
        (["--auth-tokens", "t"], "--auth-tokens applies to --http only"),
        (["--max-calls-per-second", "9"], "--max-calls-per-second applies to --http only"),
        (["--http", "127.0.0.1:0", "--max-calls-per-second", "-1"], "expected a whole number"),
        (["--http", "0.0.0.0:0", "--allow-remote"], "--allow-remote needs --auth-tokens or --auth-jwks"),
    ],
)  # fmt: skip
def test_an_authorization_mistake_is_one_line_and_status_2(flags: list[str], says: str) -> None:
    """spec: D-MCP-032, D-MCP-035 -- found before the (missing) configuration is read."""
    done = run_cli("--config", "/nonexistent.json", *flags)
    stderr = done.stderr.decode()
    assert done.returncode == 2 and says in stderr.splitlines()[-1], stderr


def test_a_jwks_file_pyjwt_cannot_use_is_one_line(tmp_path: Path) -> None:
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps({"keys": [{"kty": "nope"}]}), encoding="utf-8")
    stderr = one_line(run_cli("--config", "/nonexistent.json", "--http", "127.0.0.1:0", "--auth-jwks", str(keys),
                              "--auth-issuer", "https://i.example", "--auth-audience", "a"))  # fmt: skip
    assert stderr.startswith(f"intent-runtime-mcp: configuration fault: {keys}#: CONFIG_INVALID: not a usable JWK Set"), stderr


def test_allow_remote_with_authorization_binds_without_a_warning(tmp_path: Path) -> None:
    """spec: D-MCP-035 -- accepted; the broken configuration stops it before anything is bound."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"principal": "a", "sha256": DIGEST}]}), encoding="utf-8")
    config = tmp_path / "config.json"
    config.write_text("{", encoding="utf-8")
    stderr = one_line(run_cli("--config", str(config), "--http", "0.0.0.0:0", "--allow-remote", "--auth-tokens", str(tokens)))
    assert stderr.startswith(f"intent-runtime-mcp: configuration fault: {config}#"), stderr


def test_static_tokens_match_the_digest_of_the_token_text() -> None:
    """spec: D-MCP-030 -- the UTF-8 text's digest, in any hex case; nothing else matches."""
    tokens = StaticTokens.parse(json.dumps({"tokens": [{"principal": "alice", "sha256": DIGEST.upper()},
                                                       {"principal": "bob", "sha256": hashlib.sha256("秘密".encode()).hexdigest()}]}).encode())  # fmt: skip

    async def principal(token: str) -> str | None:
        found = await tokens.verify_token(token)
        return None if found is None else found.subject

    # Starlette hands a header over as Latin-1 text: the bytes of "秘密" arrive that way.
    assert [anyio.run(principal, t) for t in ("secret", "秘密".encode().decode("latin-1"), "Secret", "", "secret ")] == [
        "alice", "bob", None, None, None]  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_caller_has_a_bucket_of_its_rate_with_a_burst() -> None:
    """spec: D-MCP-034, D-LIM-007 -- N a second, N x CALL_BURST_SECONDS at once, per caller."""
    clock = Clock()
    rates = CallRates(10, clock)
    burst = 10 * CALL_BURST_SECONDS
    assert all(rates.take("a", 1) for _ in range(burst)) and not rates.take("a", 1)
    assert rates.take("b", burst) and not rates.take("b", 1)  # another caller: its own bucket
    clock.now = 0.5
    assert rates.take("a", 5) and not rates.take("a", 1)  # half a second refills five
    assert rates.refused == 3


def test_full_buckets_are_forgotten_once_too_many_callers_are_kept() -> None:
    """spec: D-LIM-008 -- only buckets that have refilled are dropped, so no decision changes."""
    clock = Clock()
    rates = CallRates(1, clock)
    rates.take("busy", 2)
    for caller in range(MAX_TRACKED_CALLERS - 1):
        rates.take(caller, 0)  # a caller seen, its bucket still full
    rates.take("new", 1)
    assert set(rates._buckets) == {"busy", "new"}
    assert not rates.take("busy", 1)  # still empty: remembered


def _scope(headers: dict[bytes, bytes], host: str = "127.0.0.1", user: object = None) -> dict[str, object]:
    return {"type": "http", "headers": list(headers.items()), "client": (host, 5000), **({"user": user} if user else {})}


def test_whom_a_tool_call_counts_against() -> None:
    """spec: D-MCP-034 -- the principal; else the handshake session; else the address and declared clientInfo."""

    def call(name: str | None) -> dict[str, object]:
        meta = {} if name is None else {"io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}}
        return {"method": "tools/call", "params": {"name": "intent_cancel", "_meta": meta}}

    alice = AuthenticatedUser(verified("alice"))
    assert _caller(_scope({}, user=alice), call("x")) == _caller(_scope({}, "127.0.0.2", alice), call("y"))
    assert _caller(_scope({b"mcp-session-id": b"s1"}), call("x")) != _caller(_scope({b"mcp-session-id": b"s2"}), call("x"))
    assert _caller(_scope({}), call("x")) == _caller(_scope({}), call("x"))
    assert len({_caller(_scope({}), call("x")), _caller(_scope({}), call("y")), _caller(_scope({}), call(None)),
                _caller(_scope({}, "127.0.0.2"), call("x")), _caller(_scope({}, user=alice), call("x"))}) == 5  # fmt: skip


def verified(principal: str) -> AccessToken:
    tokens = StaticTokens.parse(json.dumps({"tokens": [{"principal": principal, "sha256": DIGEST}]}).encode())
    token = anyio.run(tokens.verify_token, "secret")
    assert token is not None
    return token
