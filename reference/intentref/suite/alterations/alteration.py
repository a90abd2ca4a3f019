"""The reference with something changed: one record, one proxy, one target for every alteration.

A *decision variant* (``variants``) takes a decision the seeds leave open another way they
also allow: every normative case must still pass, every reference case must fail under a
variant of a decision it cites (D-CNF-040).  A *fault* (``faulty``) breaks one rule on
purpose: some case must fail, a normative one when the rule is the seeds' own (D-CNF-033).

Both are an ``Alteration``.  Inside the reference it swaps methods of ``Policy`` (the core's
rules), ``JobStore`` (the Bridge's decisions) and ``Writer`` (the writing of replies) with
``extend``, as ``jsonschema.validators.extend`` swaps keyword functions; outside it, boundary
hooks rewrite configurations, requests and replies, which is how most faults are made: a
broken implementation seen from outside.  ``AlteredTarget`` runs any set of alterations in
process and declares what it does not take (``lacks``), so cases needing it are unsupported,
never failed.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from intentref.bridge import BridgeReply, JobStore, create_intent_bridge
from intentref.core.errors import IntentParseError
from intentref.core.policy import REFERENCE_POLICY, Policy
from intentref.core.writer import Writer
from intentref.intent import Intent
from intentref.mcp.replies import is_bridge_reply
from intentref.suite.alterations._variant_policy import VariantPolicy
from intentref.suite.cases.capabilities import REFERENCE_CAPABILITIES
from intentref.suite.targets.base import CallSession, ConfigRejected, InProcessRun, Run, Target

# What the hooks of one session remember: ``memory["bridge"]`` is shared by every session of
# that Bridge (with ``memory["bridge"]["options"]``, the Bridge options of the run), and
# ``memory["session"]`` is an object standing for this session.
Memory = dict[str, Any]

# An override of one function of a table: called with the function it replaces (``reference``)
# first, then that function's own arguments, so that it can defer to it for what it leaves alone.
Override = Callable[..., Any]
T = TypeVar("T")


@dataclass(frozen=True)
class Alteration:
    """The reference with one thing changed (see the module's docstring).

    ``decisions``: the IDs a decision variant takes another way.  ``breaks``: the rule a fault
    breaks, with the requirement it comes from; ``seed_rule`` the seed text that rule restates
    (None when it departs only from a decision or a MAY, so only reference cases can catch
    it); ``catch_with`` what a case must do to catch it.

    The hooks default to "change nothing": ``config(name, config)`` rewrites an instance
    configuration (a copy); ``before(op, request, memory)`` rewrites a request or answers it
    (a dict with ``kind``); ``after(op, request, reply, memory)`` rewrites a reply (``op`` is
    ``prepare``, ``accept``, ``cancel``, or ``config`` for a configuration error; ``request``
    is the caller's own).  ``policy`` changes values of the ``VariantPolicy``; ``rules``,
    ``store`` and ``writer`` map a method of ``Policy`` / ``JobStore`` / ``Writer`` to its
    override (``extend``).  ``lacks`` maps a capability a case may need to the reason it is
    not offered; ``envelope_only``: the change is in the MCP envelope, which only the MCP model
    shows; ``needs_bridge_options``: only a Bridge with small capacity options reaches it
    (D-CNF-032).
    """

    name: str
    summary: str
    decisions: tuple[str, ...] = ()
    breaks: str = ""
    seed_rule: str | None = None
    catch_with: str = ""
    policy: Mapping[str, Any] = field(default_factory=dict)
    rules: Mapping[str, Override] = field(default_factory=dict)
    store: Mapping[str, Override] = field(default_factory=dict)
    writer: Mapping[str, Override] = field(default_factory=dict)
    config: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    before: Callable[[str, Any, Memory], Any] | None = None
    after: Callable[[str, Any, BridgeReply, Memory], BridgeReply] | None = None
    lacks: Mapping[str, str] = field(default_factory=dict)
    envelope_only: bool = False
    needs_bridge_options: bool = False


def error_of(reply: Any) -> dict[str, Any] | None:
    """The error of an error reply (a dict), else None."""
    err = reply.get("error") if isinstance(reply, dict) and reply.get("kind") == "error" else None
    return err if isinstance(err, dict) else None


def extend(base: type[T], overrides: Mapping[str, Override]) -> type[T]:
    """``base`` with some of its functions swapped, as ``jsonschema.validators.extend`` swaps
    keyword functions: every other function is ``base``'s own, and ``base`` is left untouched.

    A name ``base`` does not define raises AttributeError (a typo would change nothing).
    """
    table: dict[str, Any] = {}
    for name, override in overrides.items():
        found = inspect.getattr_static(base, name)
        if isinstance(found, classmethod):
            table[name] = classmethod(_swapped(found.__func__, override))
        else:
            table[name] = _swapped(found, override)
    return type(base.__name__, (base,), table)


def _swapped(reference: Callable[..., Any], override: Override) -> Callable[..., Any]:
    def swapped(*args: Any, **kwargs: Any) -> Any:
        return override(reference, *args, **kwargs)

    swapped.__name__ = swapped.__qualname__ = override.__name__
    return swapped


def _extended(base: type[T], alterations: Iterable[Alteration], table: str) -> type[T]:
    """``base`` with every alteration's overrides of ``table``, earlier alterations outermost:
    where two swap the same function, the first is given the second as its reference."""
    for alteration in reversed(tuple(alterations)):
        overrides: Mapping[str, Override] = getattr(alteration, table)
        if overrides:
            base = extend(base, overrides)
    return base


def altered_store(alterations: Iterable[Alteration]) -> type[JobStore]:
    """``JobStore`` with every alteration's store overrides, earlier alterations outermost."""
    return _extended(JobStore, alterations, "store")


def policy_changes(**changes: Any) -> dict[str, Any]:
    """Check ``changes`` name real ``VariantPolicy`` fields (a typo would silently change nothing)."""
    names = {f.name for f in dataclasses.fields(VariantPolicy)}
    unknown = set(changes) - names
    if unknown:
        raise TypeError(f"not a VariantPolicy field: {', '.join(sorted(unknown))}")
    return changes


# --------------------------------------------------------------------------- the proxy


class AlteredSession(CallSession):
    """A reference Bridge session with the alterations' hooks around it.

    Like a reference session it takes and returns plain dicts, so the MCP tool layer can sit
    on top of it exactly as it sits on the reference (``AlteredTarget(envelope=True)``).
    """

    def __init__(self, inner: Any, alterations: tuple[Alteration, ...], shared: Memory) -> None:
        self._inner = inner
        self._alterations = alterations
        self._memory: Memory = {"bridge": shared, "session": object()}

    def _call(self, op: str, request: Any) -> BridgeReply:
        original = request
        request = copy.deepcopy(request)  # the hooks may edit it; ``original`` goes to the after hooks
        answered: BridgeReply | None = None
        for alteration in self._alterations:
            if alteration.before is None:
                continue
            request = alteration.before(op, request, self._memory)
            if is_bridge_reply(request):
                answered = request
                break
        reply = answered if answered is not None else getattr(self._inner, op)(request)
        reply = json.loads(json.dumps(reply))  # a plain copy the hooks may edit
        for alteration in self._alterations:
            if alteration.after is not None:
                reply = alteration.after(op, original, reply, self._memory)
        return reply

    def close(self) -> None:
        self._inner.close()


class AlteredBridge:
    """A reference Bridge whose ``connect()`` gives ``AlteredSession``s."""

    def __init__(self, bridge: Any, alterations: tuple[Alteration, ...], options: Mapping[str, Any] | None = None) -> None:
        self._bridge = bridge
        self._alterations = alterations
        self._shared: Memory = {"options": dict(options or {})}  # the Bridge options of the run

    def connect(self) -> AlteredSession:
        return AlteredSession(self._bridge.connect(), self._alterations, self._shared)

    def close(self) -> None:
        self._bridge.close()


def combined_writer(alterations: Iterable[Alteration]) -> Writer | None:
    """One writer with every alteration's overrides (earlier ones outermost), or None for none."""
    chosen = tuple(alterations)
    return _extended(Writer, chosen, "writer")() if any(a.writer for a in chosen) else None


def altered_bridge_factory(alterations: Iterable[Alteration]) -> Callable[[Mapping[str, Any]], AlteredBridge]:
    """A factory of reference Bridges (from a whole BridgeConfig) with ``alterations`` around them.

    For alterations at the boundary and in the writer only: a policy is given to Intents as
    they are built, and a BridgeConfig holds Intents built already, but the Bridge writes the
    replies itself.
    """
    chosen = tuple(alterations)
    if any(a.policy or a.rules for a in chosen):
        raise ValueError("an alteration that changes the policy needs AlteredTarget.open, not a Bridge factory")
    writer = combined_writer(chosen)
    policy = REFERENCE_POLICY if writer is None else REFERENCE_POLICY.but(writer=writer)
    store = altered_store(chosen)

    def factory(config: Mapping[str, Any]) -> AlteredBridge:
        options = {k: v for k, v in config.items() if k != "instances"}
        return AlteredBridge(create_intent_bridge(config, policy=policy, store=store), chosen, options)

    return factory


# --------------------------------------------------------------------------- the target


class AlteredTarget(Target):
    """The in-process reference Bridge with ``alterations`` applied."""

    # Cases with runs of their own (capacity, the legacy TTLs' sleeps) may run side by side,
    # each on a Bridge of its own (D-CNF-011), built with the alterations' policy.
    parallel_runs = 8

    def __init__(self, alterations: Iterable[Alteration], name: str | None = None, *, envelope: bool = False) -> None:
        self.alterations = tuple(alterations)
        # envelope: the reference's own MCP tool layer on top (the in-process MCP model of
        # ``mcp_model.McpModelTarget``), so the cases that check the MCP envelope run too.
        self.envelope = envelope
        self.transport = "mcp" if envelope else "in-process"
        changed: dict[str, Any] = {}
        for alteration in self.alterations:
            changed.update(alteration.policy)
        writer = combined_writer(self.alterations)
        if writer is not None:
            changed["writer"] = writer
        self.policy: Policy = _extended(VariantPolicy, self.alterations, "rules")().but(**changed)
        self.store = altered_store(self.alterations)
        default = "variant:" + "+".join(a.name for a in self.alterations)
        self.name = (name or default) + (" (MCP model)" if envelope else "")
        self.lacks: dict[str, str] = {}
        for alteration in self.alterations:
            self.lacks.update(alteration.lacks)
        # D-CNF-030: what the reference takes, less what an alteration lacks, declared (not probed).
        self.capabilities = REFERENCE_CAPABILITIES - set(self.lacks)

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return None

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        try:
            built = {}
            for name, config in instances.items():
                config = copy.deepcopy(config)
                if isinstance(config, dict):  # anything else is the reference's to refuse
                    for alteration in self.alterations:
                        if alteration.config is not None:
                            config = alteration.config(name, config)
                built[name] = Intent(config, policy=self.policy)
            bridge = create_intent_bridge({"instances": built, **bridge_options}, policy=self.policy,
                                          store=self.store)  # fmt: skip
        except IntentParseError as exc:
            reply: BridgeReply = {"kind": "error", "error": self.policy.writer.error(exc)}
            for alteration in self.alterations:
                if alteration.after is not None:
                    reply = alteration.after("config", None, reply, {"bridge": {"options": dict(bridge_options)}})
            raise ConfigRejected(reply["error"]) from None
        altered = AlteredBridge(bridge, self.alterations, bridge_options)
        if self.envelope:
            from intentref.suite.targets.mcp_model import McpModelRun

            return McpModelRun(altered, invert_is_error=False)
        return InProcessRun(altered)

    def close(self) -> None:
        pass
