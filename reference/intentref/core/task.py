"""A step the host's model must answer, as the core decides it, before anything is written.

How a step is written is the writer's (``intentref.core.writer``), so a ``Task`` holds no text
of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intentref.core.errors import Issue
from intentref.core.request import ParseRequest
from intentref.core.schema_subset import Definition


@dataclass(frozen=True)
class Repair:
    """What a repair step says of the candidate it repairs (spec: R-TSK-010, R-TSK-011; D-PAY-004)."""

    attempt: int  # counts from 1 within the stage
    max_attempts: int
    issues: tuple[Issue, ...]  # the contract fault's issues (D-ERR-007)
    previous_candidate: str  # the rejected candidate's exact text


@dataclass(frozen=True)
class Task:
    """A step the host's model must answer, written by ``Writer.model_request`` (spec: R-RPY-002, R-BRG-012)."""

    stage: str
    language: str
    request: ParseRequest
    repair: Repair | None = None
    # A data step's material: the definition, the checked default, the selected fields.
    definition: Definition | None = None
    checked_default: dict[str, Any] | None = None
    selected: tuple[str, ...] = ()
