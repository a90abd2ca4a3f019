"""``intentref bench --only soak``: legitimate HTTP clients beside abusive ones, then alone (D-MCP-024).

Three runs: the default Bridge size, ``--max-jobs 16``, where the fair share (D-MCP-025)
leaves the legitimate clients only the slots a hoarder cannot take, and the default size
with ``--auth-tokens``, every client its own principal and the cross-client prober another
principal in the 2026-07-28 era (D-MCP-031).  Each run alternates phases of the same length,
each against a fresh ``intent-runtime-mcp --http 127.0.0.1:0``: ``with abusers`` (legitimate
SDK clients in both eras running seed 000's order flow, each flow with its own order number,
beside another process's job hoarders, slow senders, 16 MiB bodies, garbage and a
cross-client prober) and ``alone`` (the same load).

It prints legit flows/s in each phase and their ratio (target >= 0.8), legit errors and
lost or mixed-up jobs (target 0), latency, the server's peak memory against
``RSS_BOUND_MIB`` and what each abuser met.  Each client declares its own clientInfo name,
as distinct programs do (D-MCP-026); every loop is bounded by the phase's deadline and a count.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from intentref.core.wire import ACCEPT_TOOL, CANCEL_TOOL, PREPARE_TOOL
from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_INPUT, ORDER_SCHEMA
from intentref.devtools.figure import Figure

# The flows/s ratio with abusers to without that the soak must reach.
TARGET_RATIO: Final = 0.8
# D-MCP-024: the server's peak resident memory under abuse must stay below this: about
# 100 MB of interpreter, SDK and Bridge, two 16 MiB bodies in the large-body pool at about
# 60 MB each while the SDK parses them (D-MCP-022), and room for the small pool and sessions.
RSS_BOUND_MIB: Final = 400
# The small Bridge's size, and how many legitimate clients it runs: a hoarder takes half the
# slots (8), the second handshake hoarder, the 2026-07-28 hoarder and the cross-client
# prober's owner one each past the half mark, which leaves 5 slots for clients holding none.
SMALL_MAX_JOBS: Final = 16
SMALL_CLIENTS: Final = 4
ORDER_NUMBER: Final = "000123"
# Upper bounds on every abuser loop besides the deadline, so nothing runs away.
MAX_ABUSER_ITERATIONS: Final = 100_000
BIG_BODY: Final = 16 * 1024 * 1024 - 1024
# Rounds of (abused, alone) phases in a full run, alternating their order.
ROUNDS: Final = 2
# D-MCP-036: how long the abuser process may take to import the SDK, let its hoarders fill their
# quota (512 prepares one by one: over a minute at load 25 on 2 CPUs) and meet the server once
# each; past it, it is stuck, not slow.
ABUSER_START_SECONDS: Final = 600.0
# D-MCP-036: a phase lasts its seconds and until each legitimate client finished a flow; past
# this cap (about 100 times a flow's worst latency at load 25 on 2 CPUs) a client is stuck.
FIRST_FLOW_CAP_SECONDS: Final = 120.0
# The abusers' principals in the authorized profile (the legitimate clients' are soak-legit-N).
PRINCIPALS: Final = ("hoarder-1", "hoarder-2", "hoarder-3", "owner", "thief", "stranger")


@dataclass
class Phase:
    name: str
    seconds: float
    flows: int = 0
    errors: int = 0
    mixed_up: int = 0
    latencies: list[float] = field(default_factory=list)
    peak_rss_mib: float = 0.0
    abusers: dict[str, Any] = field(default_factory=dict)
    server_cpu_share: float = 0.0  # server CPU seconds per second of the phase
    server_log_lines: int = 0  # what the server wrote on stderr (after its start line)
    first_error: str = ""

    @property
    def rate(self) -> float:
        return self.flows / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- the server


class _Server:
    def __init__(self, config_file: Path, max_jobs: int | None = None, secret: bytes | None = None) -> None:
        size = [] if max_jobs is None else ["--max-jobs", str(max_jobs)]
        auth = [] if secret is None else ["--auth-tokens", str(config_file.with_name("soak-tokens.json"))]
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("intent-runtime-mcp")), "--config", str(config_file),
             "--http", "127.0.0.1:0", *size, *auth],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode("utf-8", "replace")
        found = re.search(r"serving streamable HTTP at (http://\S+)", line)
        if found is None:
            self.proc.kill()
            raise RuntimeError(f"the server did not start: {line}")
        self.url = found.group(1)
        parts = urlsplit(self.url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 0)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def peak_rss_mib(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        found = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(found.group(1)) / 1024 if found else float("nan")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err.decode("utf-8", "replace")


def _until(deadline: float) -> Iterator[int]:
    """0, 1, 2, ... while the phase's deadline is ahead, at most MAX_ABUSER_ITERATIONS times."""
    for index in range(MAX_ABUSER_ITERATIONS):
        if time.monotonic() >= deadline:
            return
        yield index


# --------------------------------------------------------------------------- legitimate clients


def _candidates(number: str) -> tuple[str, str, str]:
    """The seed order flow for order ``number``: input, core and data candidate texts."""

    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace(ORDER_NUMBER, number)

    return ORDER_INPUT.replace(ORDER_NUMBER, number), text(ORDER_CORE), text(ORDER_DATA)


def _named(name: str) -> Any:
    """The clientInfo a soak client declares (D-MCP-026: in 2026-07-28, part of who it is)."""
    from mcp_types import Implementation

    return Implementation(name=name, version="1")


def _token(secret: bytes, name: str) -> str:
    """The authorized profile's token of the client ``name``: each client is its own principal (D-MCP-031)."""
    return hmac.new(secret, name.encode(), hashlib.sha256).hexdigest()


@contextlib.asynccontextmanager
async def _client(url: str, mode: str, name: str, secret: bytes | None) -> AsyncIterator[Any]:
    """An SDK client declaring clientInfo ``name``; with a ``secret``, sending ``name``'s bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if secret is None:
        async with Client(url, mode=mode, client_info=_named(name)) as client:
            yield client
        return
    async with (
        # The SDK's own timeouts for a client it builds (mcp.shared._httpx_utils), with the token.
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {_token(secret, name)}"}, timeout=httpx2.Timeout(30.0, read=300.0)
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, client_info=_named(name)) as client,
    ):
        yield client


def _write_tokens(folder: Path, clients: int, secret: bytes) -> None:
    names = [f"soak-legit-{i}" for i in range(clients)] + [f"soak-{n}" for n in PRINCIPALS]
    digests = [{"principal": n, "sha256": hashlib.sha256(_token(secret, n).encode()).hexdigest()} for n in names]
    (folder / "soak-tokens.json").write_text(json.dumps({"tokens": digests}), encoding="utf-8")


async def _legit_worker(
    url: str, mode: str, worker: int, deadline: float, cap: float, phase: Phase, secret: bytes | None
) -> None:
    def reply_of(result: Any) -> dict[str, Any]:
        reply = result.structured_content
        return reply if isinstance(reply, dict) else {"kind": "none"}

    async with _client(url, mode, f"soak-legit-{worker}", secret) as client:
        for flow in _until(cap):
            if flow and time.monotonic() >= deadline:
                break  # its seconds are over and this client finished a flow (D-MCP-036)
            number = f"{worker:02d}{flow:04d}"
            text_input, core, data = _candidates(number)
            started = time.perf_counter()
            try:
                task = reply_of(await client.call_tool(PREPARE_TOOL, {"instance": "orders", "input": text_input}))
                if task.get("kind") != "task":
                    raise RuntimeError(f"prepare: {json.dumps(task)[:300]}")
                data_task = reply_of(await client.call_tool(
                    ACCEPT_TOOL, {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": core}))  # fmt: skip
                if data_task.get("kind") != "task":
                    raise RuntimeError(f"core accept: {json.dumps(data_task)[:300]}")
                final = reply_of(await client.call_tool(
                    ACCEPT_TOOL, {"jobId": data_task["jobId"], "stepToken": data_task["stepToken"], "candidateText": data}))  # fmt: skip
                if final.get("kind") != "result":
                    raise RuntimeError(f"data accept: {json.dumps(final)[:300]}")
            except Exception as exc:
                phase.errors += 1
                phase.first_error = phase.first_error or f"{type(exc).__name__}: {exc}"
                continue
            phase.latencies.append(time.perf_counter() - started)
            result = final["result"]
            if result.get("data") != {"orderId": number} or result.get("input") != text_input:
                phase.mixed_up += 1  # someone else's job, or a job that lost its own state
            else:
                phase.flows += 1


async def _legit_load(url: str, clients: int, seconds: float, phase: Phase, secret: bytes | None) -> None:
    started = time.monotonic()
    deadline, cap = started + seconds, started + FIRST_FLOW_CAP_SECONDS
    modes = ["legacy" if i % 2 == 0 else "auto" for i in range(clients)]
    await asyncio.gather(*(_legit_worker(url, mode, i, deadline, cap, phase, secret) for i, mode in enumerate(modes)))
    phase.seconds = time.monotonic() - started  # rates per second of the phase as it ran


# --------------------------------------------------------------------------- abusers (another process)

_INIT: Final = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "abuser", "version": "0"}},
}  # fmt: skip


def _head(address: tuple[str, int], length: int, extra: str = "") -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: {address[0]}:{address[1]}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n{extra}\r\n"
    ).encode("ascii")


async def _status_of(reader: asyncio.StreamReader) -> int:
    line = await asyncio.wait_for(reader.readline(), timeout=30)
    found = re.match(rb"HTTP/1\.1 (\d{3})", line)
    return int(found.group(1)) if found else 0


async def _hoarder(
    url: str, mode: str, name: str, deadline: float, stats: dict[str, Any], turn: asyncio.Event, hoarded: asyncio.Event,
    secret: bytes | None,
) -> None:
    """Once ``turn`` is set, prepare until refused, set ``hoarded``, and hold the jobs without answering."""
    async with _client(url, mode, name, secret) as client:
        await turn.wait()
        held = 0
        for _ in range(2048):
            reply = (await client.call_tool(PREPARE_TOOL, {"instance": "orders", "input": "查询订单 999999"}))
            content = reply.structured_content or {}
            if content.get("kind") != "task":
                stats["hoarder_refused"] += 1
                break
            held += 1
        stats["hoarded_jobs"] += held
        hoarded.set()
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))  # hold them, never answer


async def _slow_sender(address: tuple[str, int], body: bool, deadline: float, stats: dict[str, Any]) -> None:
    """A byte a second of a request head (or, after a whole head, of a body), reconnecting when cut off."""
    for _ in _until(deadline):
        try:
            reader, writer = await asyncio.open_connection(*address)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        answered = asyncio.ensure_future(reader.read(65536))  # the server's answer, or its close
        try:
            trickle = _head(address, 10)
            if body:
                writer.write(_head(address, 1_000_000))
                trickle = b"{" * 1000
            for byte in trickle:
                if time.monotonic() >= deadline or answered.done():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1.0)
            if answered.done():
                stats["slow_cut_off_by_server"] += 1
        except OSError:
            stats["slow_cut_off_by_server"] += 1
        finally:
            answered.cancel()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _big_bodies(address: tuple[str, int], deadline: float, stats: dict[str, Any], met: asyncio.Event) -> None:
    """16 MiB bodies back to back, never honouring Retry-After; each is sent until the server answers."""
    prefix = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"'
    body = memoryview(prefix + b"x" * (BIG_BODY - len(prefix) - 3) + b'"}}')
    for _ in _until(deadline):
        try:
            reader, writer = await asyncio.open_connection(*address)
            writer.write(_head(address, len(body), "Mcp-Protocol-Version: 2026-07-28\r\n"))
            status = asyncio.ensure_future(_status_of(reader))
            for start in range(0, len(body), 1 << 18):
                if status.done():
                    break  # answered before the body was through: stop pushing bytes nobody reads
                writer.write(body[start:start + (1 << 18)])
                await writer.drain()
            code = await status
            stats[f"big_body_{code}"] = stats.get(f"big_body_{code}", 0) + 1
            writer.close()
        except (OSError, TimeoutError):
            stats["big_body_failed"] += 1
            await asyncio.sleep(0.1)
        met.set()


async def _garbage(address: tuple[str, int], deadline: float, stats: dict[str, Any], met: asyncio.Event) -> None:
    rng = random.Random(7)
    junk = [rng.randbytes(256) for _ in range(64)]  # made once: the abuser's CPU is not the server's
    for i in _until(deadline):
        try:
            reader, writer = await asyncio.open_connection(*address)
            piece = junk[i % len(junk)]
            if i % 2:
                writer.write(_head(address, len(piece)) + piece)  # a body that is not JSON
            else:
                writer.write(piece + b"\r\n\r\n")  # bytes that are not HTTP
            await writer.drain()
            status = await _status_of(reader)
            key = f"garbage_{status}" if status else "garbage_unanswered"
            stats[key] = stats.get(key, 0) + 1
            writer.close()
        except (TimeoutError, OSError):
            stats["garbage_dropped"] += 1
        met.set()
        await asyncio.sleep(0.01)


async def _cross_client(
    url: str, deadline: float, stats: dict[str, Any], hoarded: asyncio.Event, secret: bytes | None, met: asyncio.Event
) -> None:
    await hoarded.wait()  # after the hoarders, so what they could take does not depend on a probe's timing
    # Without authorization a 2026-07-28 jobId is a bearer capability (D-MCP-020), so the thief
    # probes a handshake job; with it, the thief is another principal in the 2026-07-28 era (D-MCP-031).
    mode = "legacy" if secret is None else "auto"
    async with (
        _client(url, mode, "soak-owner", secret) as owner,
        _client(url, mode, "soak-thief", secret) as thief,
        _client(url, "auto", "soak-stranger", secret) as stranger,
    ):
        for _ in _until(deadline):
            task = (await owner.call_tool(PREPARE_TOOL, {"instance": "orders", "input": ORDER_INPUT})).structured_content
            if not task or task.get("kind") != "task":
                await asyncio.sleep(0.2)
                continue
            _, core, _ = _candidates(ORDER_NUMBER)
            stolen = (await thief.call_tool(ACCEPT_TOOL, {
                "jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": core})).structured_content or {}  # fmt: skip
            made_up = (await stranger.call_tool(CANCEL_TOOL, {"jobId": os.urandom(16).hex()})).structured_content or {}
            for reply in (stolen, made_up):
                code = reply.get("error", {}).get("code") if reply.get("kind") == "error" else None
                stats["cross_client_refused" if code == "BRIDGE_JOB_NOT_FOUND" else "cross_client_succeeded"] += 1
            met.set()
            await owner.call_tool(CANCEL_TOOL, {"jobId": task["jobId"]})
            await asyncio.sleep(0.5)  # a probe, not a second legitimate load


async def _abuse(
    url: str, seconds: float, smoke: bool, stats: dict[str, Any], ready: Any, stop: Any, out: Any, secret: bytes | None
) -> None:
    parts = urlsplit(url)
    address = (parts.hostname or "127.0.0.1", parts.port or 0)
    deadline = time.monotonic() + seconds  # a backstop: the measured load's end (stop) comes first
    slow = 4 if smoke else 60
    # One after another, so the first takes all the share allows and the others meet the half mark.
    hoarders = [("legacy", "soak-hoarder-1"), ("legacy", "soak-hoarder-2"), ("auto", "soak-hoarder-3")]
    turns = [asyncio.Event() for _ in range(len(hoarders) + 1)]
    turns[0].set()
    met = [asyncio.Event() for _ in range(3)]  # the body sender's, garbage's and prober's first answer

    async def announce() -> None:
        # The measured load starts once every hoarder holds all it can and every other abuser met
        # the server once, however long that takes on a busy machine (D-MCP-036).
        for event in (turns[-1], *met):
            await event.wait()
        ready.set()

    async def after_hoarders(noise: Any) -> None:
        # Not while the hoarders fill up, however long that takes: the server logs refused
        # requests once per 10 s (D-MCP-023), so the log would grow with the machine's load.
        await turns[-1].wait()
        await noise

    jobs = [
        announce(),
        *(_hoarder(url, mode, name, deadline, stats, turns[i], turns[i + 1], secret) for i, (mode, name) in enumerate(hoarders)),
        *(after_hoarders(_slow_sender(address, i % 2 == 1, deadline, stats)) for i in range(slow)),
        *(after_hoarders(_big_bodies(address, deadline, stats, met[0])) for _ in range(1 if smoke else 4)),
        after_hoarders(_garbage(address, deadline, stats, met[1])),
        _cross_client(url, deadline, stats, turns[-1], secret, met[2]),
    ]
    tasks = [asyncio.ensure_future(job) for job in jobs]
    stopped = asyncio.ensure_future(asyncio.to_thread(stop.wait, seconds))
    await stopped
    crashed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks, timeout=5)  # a client's own teardown may linger; the figures do not wait for it
    stats["abuser_crashes"] = len(crashed)
    if crashed:
        failure = crashed[0].exception()
        stats["abuser_first_crash"] = f"{type(failure).__name__}: {failure}"[:300]
    stats["abuser_cpu_s"] = round(time.process_time(), 2)
    out.put(dict(stats))


def _abuse_process(url: str, seconds: float, smoke: bool, out: Any, ready: Any, stop: Any, secret: bytes | None) -> None:
    stats: dict[str, Any] = {key: 0 for key in (
        "hoarded_jobs", "hoarder_refused", "slow_cut_off_by_server", "big_body_failed",
        "garbage_dropped", "cross_client_refused", "cross_client_succeeded")}  # fmt: skip
    asyncio.run(_abuse(url, seconds, smoke, stats, ready, stop, out, secret))


# --------------------------------------------------------------------------- phases


def _config_file(folder: Path) -> Path:
    path = folder / "soak-instances.json"
    path.write_text(json.dumps({"instances": {"orders": {"language": "zh-CN", "schema": ORDER_SCHEMA}}},
                               ensure_ascii=False), encoding="utf-8")  # fmt: skip
    return path


def run_phase(
    config_file: Path, name: str, clients: int, seconds: float, abusers: bool, smoke: bool, max_jobs: int | None = None,
    secret: bytes | None = None,
) -> Phase:
    phase = Phase(name, seconds)
    server = _Server(config_file, max_jobs, secret)
    abuse = None
    queue: Any = None
    try:
        if abusers:
            context = multiprocessing.get_context("spawn")
            queue = context.Queue()
            ready = context.Event()
            stop = context.Event()
            # The abusers run until the measured load ends (stop); their own deadline is a backstop.
            backstop = ABUSER_START_SECONDS + FIRST_FLOW_CAP_SECONDS + seconds
            abuse = context.Process(
                target=_abuse_process, args=(server.url, backstop, smoke, queue, ready, stop, secret), daemon=True
            )
            abuse.start()
            waited = time.monotonic()
            while not ready.wait(1.0):
                if not abuse.is_alive() or time.monotonic() - waited > ABUSER_START_SECONDS:
                    raise RuntimeError(f"the abusers were not ready in {time.monotonic() - waited:.0f} s (cap "
                                       f"{ABUSER_START_SECONDS:g} s), their process {'stuck' if abuse.is_alive() else 'ended'}")  # fmt: skip
            time.sleep(0.5)  # the slow senders and body senders are under way too
        cpu_before = server.cpu_seconds()
        asyncio.run(_legit_load(server.url, clients, seconds, phase, secret))
        phase.server_cpu_share = (server.cpu_seconds() - cpu_before) / phase.seconds
        phase.peak_rss_mib = server.peak_rss_mib()
        if abuse is not None:
            stop.set()
            with contextlib.suppress(Exception):
                phase.abusers = queue.get(timeout=300)  # a wait for work to end, not a bound on it
            abuse.join(timeout=10)
    finally:
        if abuse is not None and abuse.is_alive():
            abuse.kill()
        phase.server_log_lines = len(server.stop().splitlines())
    return phase


def _merge(into: Phase, part: Phase) -> None:
    into.seconds += part.seconds
    into.flows += part.flows
    into.errors += part.errors
    into.mixed_up += part.mixed_up
    into.latencies += part.latencies
    into.first_error = into.first_error or part.first_error
    into.peak_rss_mib = max(into.peak_rss_mib, part.peak_rss_mib)
    into.server_cpu_share += part.server_cpu_share * part.seconds  # divided by the total below
    into.server_log_lines += part.server_log_lines
    for key, value in part.abusers.items():
        if isinstance(value, int | float):
            into.abusers[key] = into.abusers.get(key, 0) + value
        else:
            into.abusers.setdefault(key, value)


def soak(
    smoke: bool = False, clients: int | None = None, seconds: float | None = None, max_jobs: int | None = None,
    authorized: bool = False,
) -> tuple[Phase, Phase]:
    """Alternate phases with and without abusers (ABBA order), so a machine whose other load
    drifts during the run weighs on both sides alike; return the two totals.  ``max_jobs``
    sizes the Bridge (None: the default); ``authorized`` serves with ``--auth-tokens``, every
    client its own principal (D-MCP-031)."""
    clients = clients or (4 if smoke or max_jobs == SMALL_MAX_JOBS else 8)
    seconds = seconds or (2.0 if smoke else 12.0)  # 12 s: past the 10 s head deadline, so slow senders are cut off
    rounds = 1 if smoke else ROUNDS
    abused, alone = Phase("with abusers", 0.0), Phase("alone", 0.0)
    with tempfile.TemporaryDirectory(prefix="intentref-soak-") as folder:
        config_file = _config_file(Path(folder))
        secret = os.urandom(16) if authorized else None
        if secret is not None:
            _write_tokens(Path(folder), clients, secret)
        for round_number in range(rounds):
            order = (True, False) if round_number % 2 == 0 else (False, True)
            for with_abusers in order:
                part = run_phase(config_file, "", clients, seconds, with_abusers, smoke, max_jobs, secret)
                _merge(abused if with_abusers else alone, part)
    for phase in (abused, alone):
        phase.server_cpu_share /= phase.seconds or 1.0
    return abused, alone


def report(abused: Phase, alone: Phase, label: str = "soak") -> list[str]:
    ratio = abused.rate / alone.rate if alone.rate else float("nan")
    lines = [
        f"{label}: legit flows/s with abusers {abused.rate:.1f}, alone {alone.rate:.1f}; ratio {ratio:.2f} "
        f"(target >= {TARGET_RATIO})",
        f"{label}: legit errors {abused.errors} with abusers, {alone.errors} alone (target 0)"
        + (f"; first: {abused.first_error or alone.first_error}" if abused.errors or alone.errors else ""),
        f"{label}: lost or mixed-up jobs {abused.mixed_up + alone.mixed_up} (target 0)",
        f"{label}: flow latency p50/p99 {abused.percentile(0.5) * 1000:.1f}/{abused.percentile(0.99) * 1000:.1f} ms "
        f"with abusers, {alone.percentile(0.5) * 1000:.1f}/{alone.percentile(0.99) * 1000:.1f} ms alone",
        f"{label}: server peak RSS {abused.peak_rss_mib:.0f} MiB with abusers (bound {RSS_BOUND_MIB} MiB), "
        f"{alone.peak_rss_mib:.0f} MiB alone",
        f"{label}: server CPU {abused.server_cpu_share:.2f} core with abusers, {alone.server_cpu_share:.2f} alone; "
        f"machine: {os.cpu_count()} CPUs",
        f"{label}: server log lines {abused.server_log_lines} with abusers, {alone.server_log_lines} alone",
        f"{label}: abusers met " + ", ".join(f"{k}={v}" for k, v in sorted(abused.abusers.items())),
    ]
    return lines


# The runs of a full soak: (label, --max-jobs or None for the Bridge's default, authorized).
RUNS: Final = (
    ("soak (maxJobs 1024)", None, False),
    (f"soak (maxJobs {SMALL_MAX_JOBS})", SMALL_MAX_JOBS, False),
    ("soak (maxJobs 1024, --auth-tokens)", None, True),
)


def figures(smoke: bool = False) -> list[Figure]:
    """The bench entry, one figure per Bridge size: seconds per legit flow with abusers vs alone (1 / the flows/s ratio)."""
    out = []
    for label, max_jobs, authorized in RUNS:
        abused, alone = soak(smoke, max_jobs=max_jobs, authorized=authorized)
        for line in report(abused, alone, label):
            print(line)
        per_flow = [1 / p.rate if p.rate else float("inf") for p in (abused, alone)]
        out.append(
            Figure(
                f"{label}: legit flow beside abusers (HTTP, both eras)",
                per_flow[0],
                per_flow[1],
                "s/flow",
                round(1 / TARGET_RATIO, 3),
                "seconds per legit order flow with hoarders, slow senders, 16 MiB bodies, garbage and "
                "cross-client probes running vs the same load alone (flows/s ratio >= 0.8)",
            )
        )
    return out
