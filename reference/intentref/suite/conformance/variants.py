"""Decision variants: the reference run with alternative decisions, to prove the cases' levels.

A case marked ``normative`` must pass on every implementation that follows the seeds,
whatever it decided where they are silent; a ``reference`` case rests on the decisions it
cites.  A claim like that is only worth something if it is tested, so each variant here is
the reference with one or more of its decisions (``spec/decisions*.md``) taken another way
that the seeds also allow.  ``intentref levels`` and ``tests/conformance/test_levels.py``
then require (D-CNF-040):

* every normative case passes against every variant, and against all of them combined;
* every reference case fails under at least one variant of a decision it cites.

A variant changes the reference in one of two ways:

* *policy*: fields of the ``VariantPolicy`` (``_variant_policy``: the reference's ``Policy`` with
  its rules overridable) that the variant's Intents and Bridge are built with, read where the
  decision is applied (judging candidates, limits, capacity);
* *boundary hooks*: a variant may rewrite an instance configuration before it is built, a
  request before the reference sees it (or answer it itself), and every reply after.  That
  is how wording, payload layout, issue lists and error codes are changed: exactly the things
  an independent implementation spells its own way.

A variant is an in-process target (``variant:NAME``, or ``variant:all`` for the combined
one); it declares what it does not take (``lacks``) so that cases needing it are reported
unsupported with that reason, never failed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from intentref.core.policy import Policy
from intentref.mcp.replies import is_bridge_reply
from intentref.suite.conformance._variant import BridgeReply, State, Variant
from intentref.suite.conformance._variant_policy import VariantPolicy
from intentref.suite.conformance._variant_store import VariantStore
from intentref.suite.conformance.capabilities import REFERENCE_CAPABILITIES
from intentref.suite.conformance.targets import CallSession, ConfigRejected, InProcessRun, Run, Target

# --------------------------------------------------------------------------- the target



class VariantSession(CallSession):
    """A Bridge session of a variant: the reference's session with the variant's hooks around it.

    Like a reference session it takes and returns plain dicts, so the MCP tool layer can sit
    on top of it exactly as it sits on the reference (``VariantTarget(envelope=True)``).
    """

    def __init__(self, inner: Any, variants: tuple[Variant, ...], shared: State) -> None:
        self._inner = inner
        self._variants = variants
        # Each session's own memory; ``state["bridge"]`` is shared by every session of the run
        # (what a variant needs to tell another session's job from one never issued).
        self._state: State = {"bridge": shared, "session": object()}

    def _call(self, op: str, request: Any) -> BridgeReply:
        original = request
        request = copy.deepcopy(request)  # the hooks may edit it; ``original`` goes to the after hooks
        answered: BridgeReply | None = None
        for variant in self._variants:
            if variant.before is None:
                continue
            request = variant.before(op, request, self._state)
            if is_bridge_reply(request):
                answered = request
                break
        reply = answered if answered is not None else getattr(self._inner, op)(request)
        reply = json.loads(json.dumps(reply))  # a plain copy the hooks may edit
        for variant in self._variants:
            if variant.after is not None:
                reply = variant.after(op, original, reply, self._state)
        return reply


    def close(self) -> None:
        self._inner.close()


class VariantBridge:
    """The reference Bridge of a variant: ``connect()`` gives ``VariantSession``s."""

    def __init__(self, bridge: Any, variants: tuple[Variant, ...], options: Mapping[str, Any] | None = None) -> None:
        self._bridge = bridge
        self._variants = variants
        self._shared: State = {"options": dict(options or {})}  # the Bridge options of the run

    def connect(self) -> VariantSession:
        return VariantSession(self._bridge.connect(), self._variants, self._shared)

    def close(self) -> None:
        self._bridge.close()


class VariantTarget(Target):
    """The in-process reference Bridge with the decisions of ``variants`` taken their way."""

    # Cases with runs of their own (capacity, the legacy TTLs' sleeps) may run side by side,
    # each on a Bridge of its own (D-CNF-011), built with the variant's policy.
    parallel_runs = 8

    def __init__(self, variants: Iterable[Variant], name: str | None = None, *, envelope: bool = False) -> None:
        self.variants = tuple(variants)
        # envelope: the reference's own MCP tool layer on top (the in-process MCP model of
        # ``faulty.McpModelTarget``), so the cases that check the MCP envelope run too.
        self.envelope = envelope
        self.transport = "mcp" if envelope else "in-process"
        changed: dict[str, Any] = {}
        for variant in self.variants:
            changed.update(variant.policy)
        self.policy: Policy = VariantPolicy().but(**changed)
        self.name = (name or "variant:" + "+".join(v.name for v in self.variants)) + (" (MCP model)" if envelope else "")
        self.lacks: dict[str, str] = {}
        for variant in self.variants:
            self.lacks.update(variant.lacks)
        # D-CNF-030: what the reference takes, less what a variant lacks, declared (not probed).
        self.capabilities = REFERENCE_CAPABILITIES - set(self.lacks)

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return None

    def bridge_over(self, bridge: Any, bridge_options: Mapping[str, Any] | None = None) -> VariantBridge:
        """This variant's Bridge around ``bridge``, a reference Bridge built elsewhere.

        Only for a variant that works at the boundary alone: a policy is given to a Bridge
        and its Intents as they are built, which ``bridge`` already was.
        """
        if self.policy != VariantPolicy():
            raise ValueError(f"{self.name} changes the policy: build its Bridge with open(), not around another")
        return VariantBridge(bridge, self.variants, bridge_options)

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        from intentref.bridge import create_intent_bridge
        from intentref.core.errors import IntentParseError
        from intentref.intent import Intent

        try:
            built = {}
            for name, config in instances.items():
                config = copy.deepcopy(config)
                if isinstance(config, dict):  # anything else is the reference's to refuse
                    for variant in self.variants:
                        if variant.config is not None:
                            config = variant.config(name, config)
                built[name] = Intent(config, policy=self.policy)
            bridge = create_intent_bridge({"instances": built, **bridge_options}, policy=self.policy,
                                          store=VariantStore)  # fmt: skip
        except IntentParseError as exc:
            reply: BridgeReply = {"kind": "error", "error": exc.to_json()}
            for variant in self.variants:
                if variant.after is not None:
                    reply = variant.after("config", None, reply, {})
            raise ConfigRejected(reply["error"]) from None
        variant_bridge = VariantBridge(bridge, self.variants, bridge_options)
        if self.envelope:
            from intentref.suite.conformance.faulty import McpModelRun

            return McpModelRun(variant_bridge, invert_is_error=False)
        return InProcessRun(variant_bridge)

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- the catalogue


def catalogue() -> dict[str, Variant]:
    """Every named variant, in a stable order."""
    from intentref.suite.conformance import _variants_boundary, _variants_bridge, _variants_core

    found: dict[str, Variant] = {}
    for module in (_variants_boundary, _variants_core, _variants_bridge):
        for variant in module.VARIANTS:
            if variant.name in found:
                raise ValueError(f"two decision variants are named {variant.name!r}")
            found[variant.name] = variant
    return found


# Variants that cannot be combined with the others (they take the same decision another
# way, e.g. smaller and larger limits): the combined target leaves out every name listed
# here but the first of each group.
def combined() -> tuple[Variant, ...]:
    """One variant per decision: every variant that does not clash with an earlier one."""
    chosen_variants: list[Variant] = []
    taken: set[str] = set()
    for variant in catalogue().values():
        if taken.intersection(variant.decisions):
            continue
        chosen_variants.append(variant)
        taken.update(variant.decisions)
    return tuple(chosen_variants)


def target(name: str, *, envelope: bool = False) -> VariantTarget:
    """The target ``variant:NAME``; ``all`` is every non-clashing variant at once."""
    if name == "all":
        return VariantTarget(combined(), name="variant:all", envelope=envelope)
    variants = catalogue()
    if name not in variants:
        raise KeyError(f"no decision variant {name!r}; known: all, {', '.join(variants)}")
    return VariantTarget([variants[name]], envelope=envelope)
