"""The Bridge: host-assisted jobs behind prepare / accept / cancel (seed 000 "完整 Bridge 流程").

Here: the BridgeConfig, sessions and each request's members read and checked; the jobs are
kept by the ledger, ``intentref.bridge_store``, whose public names are importable from here
too.  No IO, no asyncio, no thread: every call returns a JSON-ready BridgeReply dict, which
the MCP adapter (``intentref.mcp.server``) and any other transport only move.

Threading (D-BRG-017): a Bridge and all of its sessions share one mutable store and
take no lock.  Call them from one thread at a time (an asyncio loop, or a lock held by
the caller); concurrent calls from several threads are not supported.

Decisions cited as ``D-BRG-NNN`` are written down in ``spec/decisions-bridge.md``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from intentref.bridge_store import (
    CAPACITY_OPTIONS,
    CONFLICT_MESSAGE,
    DIGEST_BYTES,
    NOT_FOUND_MESSAGE,
    TOKEN_BYTES,
    TTL_OPTIONS,
    BridgeOptions,
    BridgeReply,
    Clock,
    JobRecord,
    JobStore,
    UsedStep,
    bridge_error,
    error_reply,
    fresh_reply,
    iso_timestamp,
    not_found_error,
    retained_json,
    stored_reply,
)
from intentref.core import jsonpointer
from intentref.core.errors import CANCEL_CODES, IntentParseError
from intentref.core.jsontext import json_type_name
from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES, utf8_length, well_formed
from intentref.core.policy import REFERENCE_POLICY, Policy
from intentref.intent import Intent, config_error

# The ledger's public names, importable from the Bridge as they always were.
__all__ = [
    "ACCEPT_KEYS", "CANCEL_KEYS", "CAPACITY_OPTIONS", "CONFIG_KEYS", "CONFLICT_MESSAGE", "DEFAULT_OUTCOME",
    "DIGEST_BYTES", "NOT_FOUND_MESSAGE", "TOKEN_BYTES", "TTL_OPTIONS", "BridgeClosedError",
    "BridgeOptions", "BridgeReply", "BridgeSession", "Clock", "IntentBridge", "JobRecord", "JobStore",
    "UsedStep", "create_intent_bridge", "iso_timestamp", "not_found_error", "read_bridge_config",
    "retained_json", "stored_reply", "unknown_instance_message",
]  # fmt: skip

# An unknown instance's message quotes the name given and the configured ones, bounded: the
# name is the caller's text (any length), and a Bridge may hold many instances.
MAX_QUOTED_NAME: Final = 64  # characters of a quoted name, then "…"
MAX_NAMED_INSTANCES: Final = 10  # configured instances named, then how many more

# spec: R-CAP-001 -- the BridgeConfig members; anything else is refused (D-BRG-014).
CONFIG_KEYS: Final = frozenset({"instances", *CAPACITY_OPTIONS, *TTL_OPTIONS})


ACCEPT_KEYS: Final = ("jobId", "stepToken", "candidateText")  # spec: R-BRG-020, all required
CANCEL_KEYS: Final = ("jobId", "outcome", "detail")  # spec: R-BRG-021
DEFAULT_OUTCOME: Final = "cancelled"  # spec: R-CAN-002


class BridgeClosedError(RuntimeError):
    """``prepare`` or ``connect`` on a closed session or Bridge (D-BRG-004, spec: R-LIF-008)."""


# --------------------------------------------------------------------------- configuration


def read_bridge_config(config: Any, policy: Policy = REFERENCE_POLICY, store: type[JobStore] | None = None) -> BridgeOptions:
    """Check a BridgeConfig, or raise CONFIG_INVALID (stage config) naming the member."""
    if not isinstance(config, Mapping):
        raise config_error("", "a Bridge config must be an object.")
    for key in sorted(str(k) for k in config):
        if key not in CONFIG_KEYS:
            raise config_error("/" + jsonpointer.escape_token(key), f"unknown Bridge config member {key!r}.")
    instances = config.get("instances")
    if not isinstance(instances, Mapping) or not instances:
        raise config_error("/instances", "instances must be an object naming at least one Intent.")
    for name, intent in instances.items():
        if not isinstance(name, str):
            raise config_error("/instances", "instance names must be strings.")
        if not isinstance(intent, Intent):
            raise config_error(
                "/instances/" + jsonpointer.escape_token(name), "an instance must be an Intent."
            )
    options = (store or JobStore).read_options(config, policy)  # spec: R-CAP-014, R-CAP-015
    # A private copy: the caller may go on editing its dict without moving our instances.
    return BridgeOptions(dict(instances), *options)


# --------------------------------------------------------------------------- request members


def _bridge_input_error(path: str, message: str) -> IntentParseError:
    # D-BRG-001: a parameter fault is an INPUT_INVALID reply of stage bridge naming the member.
    return bridge_error("INPUT_INVALID", path, message)


def _read_members(request: Any, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(request, Mapping):
        raise _bridge_input_error("", "the request must be an object.")
    unknown = sorted(str(k) for k in request if k not in allowed)
    if unknown:
        # The pointer names the member; the message does not repeat it (it may be huge).
        raise _bridge_input_error("/" + jsonpointer.escape_token(unknown[0]), "unknown request member.")
    return request


def _quoted(name: str) -> str:
    shown = well_formed(name)
    return json.dumps(shown if len(shown) <= MAX_QUOTED_NAME else shown[:MAX_QUOTED_NAME] + "…", ensure_ascii=False)


def unknown_instance_message(name: str, instances: Mapping[str, Any]) -> str:
    """D-ERR-003's message: the name given and the configured ones, in one fixed-form sentence."""
    configured = sorted(instances)
    named = ", ".join(_quoted(n) for n in configured[:MAX_NAMED_INSTANCES])
    if len(configured) > MAX_NAMED_INSTANCES:
        named += f" and {len(configured) - MAX_NAMED_INSTANCES} more"
    held = f"the configured instances are {named}" if configured else "the Bridge holds no instances"
    return f"instance {_quoted(name)} is not configured; {held}."


def _required_text(request: Mapping[str, Any], name: str) -> str:
    if name not in request:
        raise _bridge_input_error(f"/{name}", f"{name} is required.")
    value = request[name]
    if not isinstance(value, str):
        raise _bridge_input_error(f"/{name}", f"{name} must be a string, got {json_type_name(value)}.")
    return value


def _monotonic_ms() -> float:
    return time.monotonic() * 1000.0


def _wall_ms() -> float:
    return time.time() * 1000.0


def _accept_parameters(request: Any) -> tuple[str, str, str]:
    """jobId, stepToken and candidateText, each a string (spec: R-BRG-020)."""
    members = _read_members(request, ACCEPT_KEYS)
    job_id, step_token, candidate_text = (_required_text(members, name) for name in ACCEPT_KEYS)
    return job_id, step_token, candidate_text


def _cancel_parameters(request: Any, policy: Policy) -> tuple[str, str, str | None]:
    """jobId, the outcome and the detail of a cancel (spec: R-BRG-021)."""
    members = _read_members(request, CANCEL_KEYS)
    job_id = _required_text(members, "jobId")
    outcome = DEFAULT_OUTCOME
    if "outcome" in members:  # D-BRG-015 -- absent means cancelled; null is not absent
        outcome = members["outcome"]
        if not isinstance(outcome, str) or outcome not in CANCEL_CODES:  # spec: R-CAN-001
            raise _bridge_input_error("/outcome", "outcome must be cancelled, refusal or incomplete.")
    detail = None
    if "detail" in members:
        detail = _required_text(members, "detail")
        if utf8_length(detail, policy.lone_surrogate_utf8_bytes) > MAX_CANCEL_DETAIL_BYTES:  # spec: R-CAN-003, R-CAN-004
            raise _bridge_input_error("/detail", f"detail exceeds {MAX_CANCEL_DETAIL_BYTES} UTF-8 bytes.")
    return job_id, outcome, detail


# --------------------------------------------------------------------------- public objects


class BridgeSession:
    """One connection's job ownership (spec: R-BRG-014, R-BRG-022).

    ``accept`` is a plain method here: judging a candidate does no IO, and a transport that
    wants a coroutine wraps the call (D-BRG-017).
    """

    def __init__(self, store: JobStore, bridge: IntentBridge) -> None:
        self._store = store
        self._bridge = bridge
        self._job_ids: set[str] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed or self._store.closed

    def _replying(self, call: Callable[[Any], BridgeReply], request: Any) -> BridgeReply:
        try:
            return call(request)
        except IntentParseError as exc:
            return error_reply(exc, self._store.policy.writer)

    # --- prepare ---------------------------------------------------------------------------

    def prepare(self, request: Any) -> BridgeReply:
        """Open a job: its first task, or an error reply; nothing is kept on an error."""
        if self.closed:  # D-BRG-004
            raise BridgeClosedError("prepare() on a closed Bridge session")
        return self._replying(self._prepare, request)

    def _prepare(self, request: Any) -> BridgeReply:
        now = self._store.sweep()
        if not isinstance(request, Mapping):
            raise _bridge_input_error("", "the request must be an object.")
        name = _required_text(request, "instance")  # spec: R-BRG-018
        intent = self._store.options.instances.get(name)
        if intent is None:
            message = unknown_instance_message(name, self._store.options.instances)
            raise bridge_error("BRIDGE_INSTANCE_NOT_FOUND", "/instance", message)
        # D-BRG-002: the rest is a parse request, judged exactly as Intent.parse judges it
        # (spec: R-BRG-019); the store decides when, against capacity (D-BRG-012).
        parse_request = {k: v for k, v in request.items() if k != "instance"}
        return fresh_reply(self._store.open_job(self, lambda: intent.start(parse_request), now))

    # --- accept ----------------------------------------------------------------------------

    def accept(self, request: Any) -> BridgeReply:
        """Submit one complete candidate for a step (spec: R-RPY-007)."""
        return self._replying(self._accept, request)

    def _accept(self, request: Any) -> BridgeReply:
        store = self._store
        job_id, step_token, candidate_text = store.read_call(self, lambda: _accept_parameters(request))
        now = store.sweep()
        record = store.lookup(self, job_id)
        if record is None:  # spec: R-IDM-006
            raise store.missing(self, job_id)
        return store.answer(record, step_token, candidate_text, now)

    # --- cancel ----------------------------------------------------------------------------

    def cancel(self, request: Any) -> BridgeReply:
        """End an active job, or repeat a retained job's terminal reply (spec: R-CAN-005..009)."""
        return self._replying(self._cancel, request)

    def _cancel(self, request: Any) -> BridgeReply:
        store = self._store
        job_id, outcome, detail = store.read_call(self, lambda: _cancel_parameters(request, store.policy))
        now = store.sweep()
        record = store.lookup(self, job_id)
        if record is None:  # spec: R-CAN-009
            raise store.missing(self, job_id)
        if record.job is None:  # spec: R-CAN-008 -- the original terminal reply, maybe a result
            return fresh_reply(record.terminal_reply())
        return fresh_reply(store.end(record, record.job.cancel(outcome, detail), now))

    # --- close -----------------------------------------------------------------------------

    def close(self) -> None:
        """Release every job of this session, active or retained (spec: R-LIF-012, D-BRG-005)."""
        if self._closed:
            return
        self._closed = True
        self._store.close_session(self)
        self._bridge._sessions.discard(self)


class IntentBridge:
    """``createIntentBridge(config)``: ``connect()`` and ``close()`` (spec: R-BRG-016)."""

    def __init__(self, options: BridgeOptions, clock: Clock, wall_clock: Clock, policy: Policy = REFERENCE_POLICY,
                 store: type[JobStore] | None = None) -> None:  # fmt: skip
        self._store = (store or JobStore)(options, clock, wall_clock, policy)
        self._sessions: set[BridgeSession] = set()

    @property
    def options(self) -> BridgeOptions:
        return self._store.options

    @property
    def closed(self) -> bool:
        return self._store.closed

    def connect(self) -> BridgeSession:
        if self._store.closed:
            raise BridgeClosedError("connect() on a closed Bridge")
        session = BridgeSession(self._store, self)
        self._sessions.add(session)
        return session

    def close(self) -> None:
        """Close every session; the caller's Intent instances stay untouched (spec: R-BRG-017)."""
        for session in list(self._sessions):
            session.close()
        self._store.closed = True

    def stats(self) -> dict[str, int]:
        """Read-only counters: active jobs, job records, and the bytes maxReplayBytes counts (D-BRG-019)."""
        return self._store.stats()


def create_intent_bridge(
    config: Mapping[str, Any],
    *,
    clock: Clock | None = None,
    wall_clock: Clock | None = None,
    policy: Policy = REFERENCE_POLICY,
    store: type[JobStore] | None = None,
) -> IntentBridge:
    """Build a Bridge from a BridgeConfig, or raise CONFIG_INVALID.

    ``clock`` (monotonic ms, the legacy TTLs) and ``wall_clock`` (epoch ms, ``expiresAt``) are
    injectable so tests control time (D-BRG-018).  ``policy`` holds the decided values
    (D-LIM-001); ``store`` the Bridge's own decisions (D-BRG-*), swapped by a decision variant.
    """
    options = read_bridge_config(config, policy, store)
    return IntentBridge(options, clock or _monotonic_ms, wall_clock or _wall_ms, policy, store)
