"""The protocol's names on the wire, each spelled once: the three MCP tools, the operation each
performs, the cancel outcomes, and the refusals that leave a job as it was.

What lives here: names and small tables only, no behaviour. Every layer may import this
module (it imports nothing but ``intentref.core.errors``), so the MCP server, the runner, the
property engine, the fuzz walker and the host judge read the same spelling instead of keeping
copies that could drift apart.
"""

from __future__ import annotations

from typing import Final

from intentref.core.errors import CANCEL_CODES

# The three tools and the Bridge method each calls (spec: R-BRG-002; the prepare tool's name: D-MCP-001).
TOOL_OF_OP: Final[dict[str, str]] = {"prepare": "intent_prepare", "accept": "intent_accept", "cancel": "intent_cancel"}
OP_OF_TOOL: Final[dict[str, str]] = {tool: op for op, tool in TOOL_OF_OP.items()}
TOOL_NAMES: Final[tuple[str, ...]] = tuple(TOOL_OF_OP.values())
PREPARE_TOOL: Final = TOOL_OF_OP["prepare"]
ACCEPT_TOOL: Final = TOOL_OF_OP["accept"]
CANCEL_TOOL: Final = TOOL_OF_OP["cancel"]

# The cancel outcomes and the code each ends a job with (spec: R-CAN-005, R-CAN-006, R-CAN-007); the
# table itself lives with the error codes, this is its one public name on the wire side.
CANCEL_OUTCOMES: Final[dict[str, str]] = CANCEL_CODES
CANCEL_ENDING_CODES: Final[tuple[str, ...]] = tuple(CANCEL_CODES.values())

# Refusals of a call that are not a step of the job: the job (if any) is as it was before
# the call, so a driver that tracks a job's state keeps it (spec: R-LIF-002, R-LIF-004,
# R-LIF-005, R-CAP-013). A host may not infer from one of these codes alone that the job
# is still active; a model of the job only learns that this call changed nothing.
NOT_A_STEP_CODES: Final[tuple[str, ...]] = (
    "LIMIT_EXCEEDED",
    "INPUT_INVALID",
    "BRIDGE_STEP_CONFLICT",
    "BRIDGE_JOB_NOT_FOUND",
)
