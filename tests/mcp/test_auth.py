"""Authorization over HTTP: bearer tokens, the principal as identity, the rate limit on tool calls.

spec: D-MCP-030 (static tokens), D-MCP-031 (the principal owns jobs and quotas), D-MCP-032
(JWT access tokens), D-MCP-033 (401 and the metadata), D-MCP-034 (the rate limit).  Real
servers (the console script on 127.0.0.1, started together and shared by the module), real
SDK clients in both eras, JWTs signed here with an EC key made here, the JWKS served from a
file and from a tiny real HTTP server.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.algorithms import ECAlgorithm

from mcp_support import (
    CONFIG,
    ERAS,
    ORDER_CORE,
    ORDER_INPUT,
    ServerProcess,
    accept,
    call,
    client_from,
    finish,
    hoard,
    limit_message,
    order_flow,
    prepare_order,
    release,
    share,
)

SIZES = (2, 16, 1024)
RATE = "rate"  # the server whose rate limit the flood meets
CALLS_PER_SECOND = 5  # there: low enough for a flood to meet on any machine, however loaded
BOB_FLOWS_PER_SECOND = 1  # bob's steady pace: 3 calls a second, under his own limit however fast the machine
ONE_PER_SECOND = "one-per-second"  # the server whose limit is hit by the third call at once
PUBLIC_RESOURCE = "https://intent.example/mcp"  # the one-per-second server's URL as its clients reach it
JWKS_FILE, JWKS_URL = "jwks-file", "jwks-url"
ISSUER, AUDIENCE = "https://issuer.example", "https://mcp.example/mcp"
TOKENS = {"alice": "alice-token-4b1f0c", "bob": "bob-token-9e2d7a"}
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
PROBES_PER_CASE = 16  # jobs of the hoarder the other principal probes (accept and cancel each)
FLOOD_SECONDS = 3.0
FLOOD_SENDERS = 32
probes_refused: list[int] = []


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Keys:
    """The authorization server's signing key, and its public half as a JWK Set."""

    def __init__(self) -> None:
        self.private = ec.generate_private_key(ec.SECP256R1())
        jwk = ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        self.jwks = {"keys": [{**jwk, "kid": "k1", "alg": "ES256", "use": "sig"}]}

    def token(self, sub: str | None = "carol", *, key: Any = None, **claims: Any) -> str:
        payload = {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600, **claims}
        if sub is not None:
            payload["sub"] = sub
        return jwt.encode(payload, key or self.private, algorithm="ES256", headers={"kid": "k1"})


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture(scope="module")
def jwks_url(keys: Keys) -> Iterator[str]:
    """The JWK Set at a URL, from a real HTTP server on 127.0.0.1."""
    body = json.dumps(keys.jwks).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, keys: Keys, jwks_url: str) -> Iterator[dict[Any, ServerProcess]]:
    """One authorized ``intent-runtime-mcp --http`` per size, one meeting floods, two taking JWTs."""
    folder = tmp_path_factory.mktemp("auth")
    (folder / "intent-runtime.json").write_text(json.dumps(CONFIG, ensure_ascii=False), encoding="utf-8")
    digests = [{"principal": name, "sha256": hashlib.sha256(token.encode()).hexdigest()} for name, token in TOKENS.items()]
    (folder / "tokens.json").write_text(json.dumps({"tokens": digests}), encoding="utf-8")
    (folder / "jwks.json").write_text(json.dumps(keys.jwks), encoding="utf-8")
    tokens = ["--auth-tokens", str(folder / "tokens.json")]
    flags: dict[Any, list[str]] = {size: [*tokens, "--max-jobs", str(size)] for size in SIZES}
    flags[RATE] = [*tokens, "--max-calls-per-second", str(CALLS_PER_SECOND)]
    flags[ONE_PER_SECOND] = [*tokens, "--max-calls-per-second", "1", "--auth-resource", PUBLIC_RESOURCE]
    for name, source in ((JWKS_FILE, str(folder / "jwks.json")), (JWKS_URL, jwks_url)):
        flags[name] = ["--auth-jwks", source, "--auth-issuer", ISSUER, "--auth-audience", AUDIENCE]
    started = {
        key: ServerProcess("--config", str(folder / "intent-runtime.json"), "--http", "127.0.0.1:0", *extra,
                           stdin=subprocess.DEVNULL)
        for key, extra in flags.items()
    }  # fmt: skip
    try:
        for server in started.values():
            server.url = server.wait_for_stderr(r"serving streamable HTTP at (http://\S+)", timeout=180).group(1)  # type: ignore[attr-defined]
        yield started
    finally:
        codes = {key: server.stop() for key, server in started.items()}
        assert all(code == 0 for code in codes.values()), {k: s.stderr for k, s in started.items()}


def url(servers: dict[Any, ServerProcess], key: Any) -> str:
    return str(servers[key].url)  # type: ignore[attr-defined]


def raw_call(endpoint: str, token: str | None, name: str = "intent_cancel", arguments: Any = None) -> httpx.Response:
    """One 2026-07-28 tools/call as plain HTTP, so that the status and headers can be read."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {"jobId": "x" * 22}, "_meta": MODERN}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": name, **(bearer(token) if token else {})}  # fmt: skip
    return httpx.post(endpoint, json=body, headers=headers, timeout=30)


def reply_of_raw(response: httpx.Response) -> dict[str, Any]:
    """The BridgeReply of a raw tools/call answered as JSON or as one SSE event."""
    assert response.status_code == 200, response.text
    text = response.text
    data = json.loads(text[text.index("data: ") + 6:].splitlines()[0] if "data: " in text else text)
    return data["result"]["structuredContent"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- 401 and the metadata


@pytest.mark.parametrize(("key", "issuer"), [(16, None), (JWKS_FILE, ISSUER)])
def test_no_token_or_a_bad_one_is_401_pointing_at_the_metadata(servers: dict[Any, ServerProcess], key: Any, issuer: str | None) -> None:
    """spec: D-MCP-033 -- RFC 9728: the challenge names the metadata, which names this resource and its issuer."""
    endpoint = url(servers, key)
    origin = endpoint.removesuffix("/mcp")
    for headers in ({}, bearer("not-a-token"), {"Authorization": f"Basic {TOKENS['alice']}"}, bearer(TOKENS["alice"] + "x")):
        refused = httpx.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers, timeout=30)
        assert refused.status_code == 401, refused.text
        challenge = refused.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
        assert f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in challenge
        assert "token" not in refused.text.replace("invalid_token", "") or TOKENS["alice"] not in refused.text
    metadata = httpx.get(f"{origin}/.well-known/oauth-protected-resource/mcp", timeout=30).json()
    assert metadata["resource"] == endpoint
    assert [server.rstrip("/") for server in metadata["authorization_servers"]] == [issuer or origin]
    assert metadata["bearer_methods_supported"] == ["header"]


def test_the_metadata_names_the_resource_clients_reach_behind_a_proxy(servers: dict[Any, ServerProcess]) -> None:
    """spec: D-MCP-033 -- with --auth-resource, the challenge and the document name that URL, not the bound one."""
    endpoint = url(servers, ONE_PER_SECOND)
    refused = httpx.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30)
    assert refused.status_code == 401, refused.text
    public = "https://intent.example/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{public}"' in refused.headers["WWW-Authenticate"]
    metadata = httpx.get(endpoint.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp", timeout=30).json()
    assert metadata["resource"] == PUBLIC_RESOURCE


def test_a_listed_token_is_served_in_both_eras(servers: dict[Any, ServerProcess]) -> None:
    """spec: D-MCP-030 -- the token whose SHA-256 the file lists is its principal's, on every request."""
    ok = raw_call(url(servers, 16), TOKENS["bob"])
    assert ok.status_code == 200 and "BRIDGE_JOB_NOT_FOUND" in ok.text, ok.text

    async def main() -> None:
        for mode, _ in (p.values for p in ERAS):
            async with client_from(url(servers, 16), mode, "bob", headers=bearer(TOKENS["bob"])) as client:
                await order_flow(client)

    anyio.run(main)


# --------------------------------------------------------------------------- JWT access tokens


def hs256(secret: bytes, payload: dict[str, Any]) -> str:
    """A JWT MACed with ``secret``, written by hand: PyJWT refuses a public key as an HMAC secret."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signed = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode()) + "." + b64(json.dumps(payload).encode())
    return signed + "." + b64(hmac.new(secret, signed.encode(), hashlib.sha256).digest())


@pytest.fixture(scope="module")
def bad_tokens(keys: Keys) -> dict[str, str]:
    """Tokens every JWT server must refuse, each for one reason."""
    other = ec.generate_private_key(ec.SECP256R1())
    public_pem = keys.private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    payload = {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600, "sub": "carol"}
    return {
        "another audience": keys.token(aud="https://elsewhere.example/mcp"),
        "another issuer": keys.token(iss="https://other-issuer.example"),
        "expired": keys.token(exp=int(time.time()) - 60),
        "no sub": keys.token(sub=None),
        "no exp": jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "carol"}, keys.private, algorithm="ES256"),
        "another key": keys.token(key=other),
        "alg none": jwt.encode(payload, None, algorithm="none", headers={"kid": "k1"}),
        "HS256 keyed with the public key": hs256(public_pem, payload),  # the classic algorithm confusion
        "unknown kid": jwt.encode(payload, keys.private, algorithm="ES256", headers={"kid": "k2"}),
        "not a JWT": "abc.def.ghi",
    }


@pytest.mark.parametrize("source", [JWKS_FILE, JWKS_URL])
def test_a_jwt_from_the_issuer_for_this_audience_names_its_principal(
    servers: dict[Any, ServerProcess], keys: Keys, bad_tokens: dict[str, str], source: str
) -> None:
    """spec: D-MCP-032 -- signed by a JWKS key, iss and aud as configured, not expired: sub is the principal."""
    endpoint = url(servers, source)
    for why, token in bad_tokens.items():
        assert raw_call(endpoint, token).status_code == 401, why

    async def main() -> None:
        for mode, _ in (p.values for p in ERAS):
            async with client_from(endpoint, mode, "carol", headers=bearer(keys.token("carol"))) as client:
                await order_flow(client)
        # The principal is sub: dave's tokens are dave's, whichever of them he sends.
        async with client_from(endpoint, "auto", "dave", headers=bearer(keys.token("dave"))) as dave:
            task = await prepare_order(dave)
        async with client_from(endpoint, "auto", "carol", headers=bearer(keys.token("carol"))) as carol:
            probe = await call(carol, "intent_cancel", {"jobId": task["jobId"]})
            assert probe["error"]["code"] == "BRIDGE_JOB_NOT_FOUND", probe
        async with client_from(endpoint, "auto", "dave-2", headers=bearer(keys.token("dave", jti="second"))) as dave:
            await finish(dave, task)

    anyio.run(main)


# --------------------------------------------------------------------------- two principals, one Bridge


def without_id(reply: dict[str, Any], job_id: str) -> str:
    """A reply with the jobId it names taken out, to compare with what an unknown job gets."""
    return json.dumps(reply, sort_keys=True).replace(job_id, "<jobId>")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_two_principals_hoarding_and_probing_neither_locks_out_nor_reaches_the_other(
    servers: dict[Any, ServerProcess], size: int, mode: str, version: str
) -> None:
    """spec: D-MCP-031 -- the share is per principal; another principal's jobId reaches nothing of theirs."""
    endpoint = url(servers, size)

    async def main() -> None:
        async with (
            client_from(endpoint, mode, "alice-app", headers=bearer(TOKENS["alice"])) as alice,
            client_from(endpoint, mode, "bob-app", headers=bearer(TOKENS["bob"])) as bob,
        ):
            assert alice.protocol_version == version
            held, refused = await hoard(alice, size)
            bobs: list[dict[str, Any]] = []
            try:
                assert len(held) == share(size) and "the principal 'alice'" in refused, refused
                # Bob hoards too: past alice's half he gets one job, never none.
                bobs, bob_refused = await hoard(bob, size)
                assert len(bobs) == 1 and "the principal 'bob'" in bob_refused, bob_refused
                # Bob probes alice's jobs with their current stepTokens and right candidates.
                made_up = {"jobId": "A" * 22, "stepToken": held[0]["stepToken"]}
                unknown = (await accept(bob, made_up, ORDER_CORE), await call(bob, "intent_cancel", {"jobId": "A" * 22}))
                refusals = 0
                for task in held[:PROBES_PER_CASE]:
                    probes = (await accept(bob, task, ORDER_CORE), await call(bob, "intent_cancel", {"jobId": task["jobId"]}))
                    for probe, expected in zip(probes, unknown, strict=True):
                        assert without_id(probe, task["jobId"]) == without_id(expected, "A" * 22), probe
                        refusals += 1
                probes_refused.append(refusals)
                await finish(bob, bobs.pop())
                await order_flow(bob)
                # Alice's second client is still alice: her share, and in 2026-07-28 her jobs.
                async with client_from(endpoint, mode, "alice-laptop", headers=bearer(TOKENS["alice"])) as second:
                    again = await call(second, "intent_prepare", {"instance": "orders", "input": "x"})
                    assert "the principal 'alice'" in limit_message(again)
                    if version == "2026-07-28":
                        await finish(second, held.pop(0))
                    else:  # spec: D-MCP-031 -- a handshake job is its session's too
                        other = await accept(second, held[0], ORDER_CORE)
                        assert other["error"]["code"] == "BRIDGE_JOB_NOT_FOUND", other
                # Alice's probed jobs are where she left them: her next steps succeed.
                if held:
                    await finish(alice, held.pop(0))
            finally:
                if version == "2026-07-28":  # a handshake session's end releases its jobs
                    await release(alice, held)
                    await release(bob, bobs)

    anyio.run(main)


# --------------------------------------------------------------------------- the rate limit


def test_a_flood_meets_the_rate_limit_while_another_principal_works(servers: dict[Any, ServerProcess]) -> None:
    """spec: D-MCP-034 -- 429 with Retry-After for alice's flood, before the Bridge; bob's flows go on.

    Bob keeps a steady pace under his own limit; his flows/s beside the flood and alone are
    printed, not asserted: they are the machine's figures.  What is checked: the flood was
    refused, each refusal saying when to retry, and bob never was (his flows would fail).
    """
    endpoint = url(servers, RATE)
    statuses: list[int] = []  # list.append is atomic across the sender threads
    retry_after: set[str] = set()

    def flood(stop: float) -> None:
        with httpx.Client(headers=bearer(TOKENS["alice"]), timeout=30) as http:
            while time.monotonic() < stop:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "intent_cancel", "arguments": {"jobId": "x" * 22}, "_meta": MODERN}}  # fmt: skip
                reply = http.post(endpoint, json=body, headers={"Accept": "application/json, text/event-stream",
                                  "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                  "Mcp-Name": "intent_cancel"})  # fmt: skip
                statuses.append(reply.status_code)
                if reply.status_code == 429:
                    retry_after.add(reply.headers.get("Retry-After", ""))

    async def bob_flows(seconds: float) -> float:
        async with client_from(endpoint, "auto", "bob-app", headers=bearer(TOKENS["bob"])) as bob:
            flows, start = 0, time.monotonic()
            while time.monotonic() - start < seconds:
                await order_flow(bob)
                flows += 1
                await anyio.sleep(max(0.0, start + flows / BOB_FLOWS_PER_SECOND - time.monotonic()))
            return flows / (time.monotonic() - start)

    alone = anyio.run(bob_flows, FLOOD_SECONDS)
    senders = [threading.Thread(target=flood, args=(time.monotonic() + FLOOD_SECONDS + 1,)) for _ in range(FLOOD_SENDERS)]
    for sender in senders:
        sender.start()
    beside = anyio.run(bob_flows, FLOOD_SECONDS)
    for sender in senders:
        sender.join()
    counts = {status: statuses.count(status) for status in sorted(set(statuses))}
    print(f"\nrate limit {CALLS_PER_SECOND}/s: bob {beside:.2f} flows/s beside alice's flood (her replies by "
          f"status: {counts}), {alone:.2f} alone ({beside / alone:.2f})")  # fmt: skip
    assert counts.get(429, 0) > 0 and retry_after == {"1"}, counts
    assert set(counts) <= {200, 429}, counts



def test_a_refused_call_never_reaches_the_job(servers: dict[Any, ServerProcess]) -> None:
    """spec: D-MCP-034 -- at one call a second (bursts of 2), the third call at once is refused, unseen by the Bridge.

    The refused accept carries another candidate text for the job's current step: had the
    Bridge seen it, the right candidate sent afterwards with the same stepToken would be a
    step conflict.  It is the next step instead.
    """
    endpoint = url(servers, ONE_PER_SECOND)
    other_text = json.dumps(ORDER_CORE, indent=1)  # the same object, another text
    for _ in range(5):  # a machine slow enough to refill a token between calls just tries again
        time.sleep(2.5)  # a full bucket
        prepared = raw_call(endpoint, TOKENS["alice"], "intent_prepare", {"instance": "orders", "input": ORDER_INPUT})
        task = reply_of_raw(prepared)
        raw_call(endpoint, TOKENS["alice"])  # the burst's second call
        arguments = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": other_text}
        refused = raw_call(endpoint, TOKENS["alice"], "intent_accept", arguments)
        if refused.status_code == 429:
            break
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1", refused.text
    time.sleep(1.5)
    moved = reply_of_raw(raw_call(endpoint, TOKENS["alice"], "intent_accept", {**arguments, "candidateText": json.dumps(ORDER_CORE)}))
    assert moved["kind"] == "task" and moved["stage"] == "data", moved


def test_without_a_valid_token_the_answer_is_401_not_429(servers: dict[Any, ServerProcess]) -> None:
    """spec: D-MCP-033, D-MCP-034 -- an unauthenticated call takes nothing from any bucket: four at one a second, four 401s."""
    assert [raw_call(url(servers, ONE_PER_SECOND), "forged").status_code for _ in range(4)] == [401] * 4


def test_no_token_reaches_a_log(servers: dict[Any, ServerProcess], bad_tokens: dict[str, str]) -> None:
    """spec: D-MCP-030 -- every server above saw these tokens, good and bad; none wrote one."""
    secrets = [*TOKENS.values(), "not-a-token", *bad_tokens.values()]
    for key, server in servers.items():
        assert not any(secret in server.stderr for secret in secrets), (key, server.stderr[-2000:])
        assert "eyJ" not in server.stderr and "Bearer" not in server.stderr, key  # no JWT, no header
    total = sum(probes_refused)
    print(f"\ncross-principal probes refused as an unknown job: {total} ({probes_refused})")
