"""Targets for proving the differential projection fair (test_projection_fairness.py).

* ``reworded`` -- the reference with every *decided* spelling taken another way, built from
  the suite's own decision variants (``intentref.suite.conformance.variants``): other
  wording (D-ERR-006, D-INS-001), the intent_core schema re-spelled (D-COR-001), the payload
  laid out otherwise (D-PAY-001, D-PAY-003), tokens as UUIDs (D-BRG-006).  Every reply means
  what the reference's means; the differential properties must see no divergence.
* ``status_priority`` -- breaks a seed rule: an item with both a confirmation and a
  condition reason is ``conditional`` instead of ``awaiting_confirmation`` (seed 001's
  priority, R-RES-038).  Must be caught as a *normative* divergence.
* ``replay_conflicts`` -- the variant ``no-replay``: a replay answers BRIDGE_STEP_CONFLICT.
  Seed 000 lets a replay reuse the reply ("可以复用") without requiring it, so this is
  caught at *reference* level (D-BRG-007).

Run one with ``intentref properties --python variant_targets:NAME`` and this folder on
PYTHONPATH.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from intentref.bridge import create_intent_bridge
from intentref.suite.conformance import faulty, variants
from intentref.suite.conformance.faulty import Fault, items_of
from intentref.suite.conformance.targets import InProcessTarget
from intentref.suite.conformance.variants import VariantBridge, VariantTarget


class StatusPriority(Fault):
    name = "status_priority"
    breaks = "R-RES-038: awaiting_confirmation outranks conditional"
    catch_with = "an item with a confirmation and a condition reason"
    seed_rule = "001 #动作字段与状态: needs_clarification → awaiting_confirmation → conditional → ready"

    def after(self, op: str, request: Any, reply: Any) -> Any:
        for item in items_of(reply):  # a result's items and a partialResult's
            reasons = str(item.get("reason", "")).split("\n")
            if item.get("status") == "awaiting_confirmation" and len(reasons) >= 2:
                item["status"] = "conditional"  # the condition ranked above the confirmation
        return reply


# Variants of the catalogue whose decisions are spellings only: nothing the seeds fix moves.
REWORDED: Final = ("reworded", "respelled-core-schema", "payload-layout", "uuid-tokens")


def reworded_bridge(config: Mapping[str, Any]) -> VariantBridge:
    """A Bridge factory for the ``reworded`` variants, as ``variant_server.py`` needs one."""
    return reworded().bridge_over(create_intent_bridge(config))


def reworded() -> VariantTarget:
    catalogue = variants.catalogue()
    return VariantTarget([catalogue[n] for n in REWORDED], name="variant reworded")


def status_priority() -> InProcessTarget:
    return faulty.target_for(StatusPriority)


def replay_conflicts() -> VariantTarget:
    return variants.target("no-replay")
