"""What a decision variant is: the ``Variant`` record and the helpers its catalogues share.

Kept apart from ``variants`` (the targets and the catalogue) so that the three catalogue
modules (``_variants_boundary``, ``_variants_core``, ``_variants_bridge``) import only this,
and ``variants`` imports them: imports point one way (D-CNF-040).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from intentref.suite.conformance._variant_policy import VariantPolicy

BridgeReply = dict[str, Any]
State = dict[str, Any]  # one session's memory, shared by the hooks of that session


@dataclass(frozen=True)
class Variant:
    """The reference with some decisions taken another way.

    ``decisions`` are the IDs the variant changes; ``summary`` says what it does instead.
    ``policy`` names ``VariantPolicy`` fields to change: the reference is built with that policy.
    The hooks default to "change nothing":

    * ``config(name, config) -> config`` rewrites an instance configuration (a copy);
    * ``before(op, request, state) -> request | BridgeReply`` rewrites a request, or answers
      it (a dict with ``kind``) without asking the reference;
    * ``after(op, request, reply, state) -> reply`` rewrites a reply (``op`` is ``prepare``,
      ``accept``, ``cancel`` or ``config`` for a configuration error wrapped as a reply).

    ``lacks`` maps a capability a case may need (``capabilities.REPAIR_ATTEMPTS``) to the
    reason the variant does not offer it; the target then declares it does not take it.
    """

    name: str
    decisions: tuple[str, ...]
    summary: str
    policy: Mapping[str, Any] = field(default_factory=dict)
    config: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    before: Callable[[str, Any, State], Any] | None = None
    after: Callable[[str, Any, BridgeReply, State], BridgeReply] | None = None
    lacks: Mapping[str, str] = field(default_factory=dict)


def policy_changes(**changes: Any) -> dict[str, Any]:
    """Check ``changes`` name real ``VariantPolicy`` fields (a typo would silently change nothing)."""
    names = {f.name for f in dataclasses.fields(VariantPolicy)}
    unknown = set(changes) - names
    if unknown:
        raise TypeError(f"not a VariantPolicy field: {', '.join(sorted(unknown))}")
    return changes
