"""Targets for proving the differential projection fair (test_projection_fairness.py).

* ``reworded`` -- the reference with every *decided* spelling taken another way, built from
  the suite's own decision variants (``intentref.suite.alterations.variants``): other
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

from intentref.suite.alterations import faulty, variants
from intentref.suite.alterations.alteration import (
    Alteration,
    AlteredBridge,
    AlteredTarget,
    altered_bridge_factory,
)
from intentref.suite.alterations.faulty import items_of


def _awaiting_confirmation_outranked(op: str, request: Any, reply: Any, memory: dict[str, Any]) -> Any:
    for item in items_of(reply):  # a result's items and a partialResult's
        reasons = str(item.get("reason", "")).split("\n")
        if item.get("status") == "awaiting_confirmation" and len(reasons) >= 2:
            item["status"] = "conditional"  # the condition ranked above the confirmation
    return reply


STATUS_PRIORITY: Final = Alteration(
    name="status_priority",
    summary="an item with a confirmation and a condition reason is conditional",
    breaks="R-RES-038: awaiting_confirmation outranks conditional",
    catch_with="an item with a confirmation and a condition reason",
    seed_rule="001 #动作字段与状态: needs_clarification → awaiting_confirmation → conditional → ready",
    after=_awaiting_confirmation_outranked,
)


# Variants of the catalogue whose decisions are spellings only: nothing the seeds fix moves.
REWORDED: Final = ("reworded", "respelled-core-schema", "payload-layout", "uuid-tokens")


def reworded_bridge(config: Mapping[str, Any]) -> AlteredBridge:
    """A Bridge factory for the ``reworded`` variants, as ``variant_server.py`` needs one."""
    return altered_bridge_factory(reworded().alterations)(config)


def status_priority_bridge(config: Mapping[str, Any]) -> AlteredBridge:
    """A Bridge factory for ``status_priority``, as ``variant_server.py`` needs one."""
    return altered_bridge_factory([STATUS_PRIORITY])(config)


def reworded() -> AlteredTarget:
    catalogue = variants.catalogue()
    return AlteredTarget([catalogue[n] for n in REWORDED], name="variant reworded")


def status_priority() -> AlteredTarget:
    return faulty.target_for(STATUS_PRIORITY)


def replay_conflicts() -> AlteredTarget:
    return variants.target("no-replay")
