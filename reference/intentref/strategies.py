"""Hypothesis strategies for the intent-runtime protocol, for checking any implementation.

Use them like ``hypothesis.strategies``.  Every name this module exports is a function
returning a ``SearchStrategy`` (a test keeps it so); everything generated is valid by
construction unless its name says otherwise.  The types the strategies take and give, the named
faults and the pieces a property needs to drive a target (with an example) live in
``intentref.properties``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st

from intentref.suite.generators import candidates as _candidates
from intentref.suite.generators import faults as _faults
from intentref.suite.generators import replies as _replies
from intentref.suite.generators import requests as _requests
from intentref.suite.generators import schemas as _schemas
from intentref.suite.generators import texts as _texts
from intentref.suite.generators.draw import HypothesisDraw as _HypothesisDraw
from intentref.suite.generators.reference_replies import catalog_schema as _catalog_schema
from intentref.suite.generators.reference_replies import reference_reply as _reference_reply

T = TypeVar("T")

__all__ = [
    "blocker_combinations",
    "bridge_replies",
    "broken_candidates",
    "cancel_details",
    "contexts",
    "core_candidates",
    "data_candidates",
    "keys",
    "malformed_requests",
    "mcp_tool_results",
    "plans",
    "pointer_tokens",
    "requests",
    "schemas",
    "wrong_type_values",
]


def keys() -> st.SearchStrategy[str]:
    """Object keys, the JSON Pointer edge cases (``~``, ``/``, ``~1``, ``""``) first."""
    return _generated(_texts.key)


def pointer_tokens() -> st.SearchStrategy[list[str]]:
    """Reference tokens of a pointer: edge-case keys and arbitrary text (lone surrogates too)."""
    return st.lists(st.one_of(keys(), st.text()), max_size=6)


def schemas(max_fields: int = 4, max_depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """Definitions in the supported subset whose values the other strategies can generate."""
    return _generated(_schemas.schema, max_fields, max_depth)


def contexts() -> st.SearchStrategy[Any]:
    """A ``context`` member value: null, a background text, or messages with roles."""
    return _generated(_requests.context_value)


def plans(instance: str, definition: dict[str, Any] | None = None, allow_empty_selection: bool = False,
          complete: bool = False) -> st.SearchStrategy[_requests.RequestPlan]:  # fmt: skip
    """A prepare request for ``instance`` and the data a truthful model would extract from it.

    ``definition`` defaults to the catalog schema of ``instance``; ``complete`` puts every
    key the selected schema declares into the data (every optional one, arrays non-empty).
    """
    schema = _catalog_schema(instance) if definition is None else definition
    return _generated(_requests.plan_request, instance, schema, allow_empty_selection, complete)


def requests(instance: str = "default", definition: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Valid prepare requests (input, context, fields) for ``instance``."""
    return plans(instance, definition, allow_empty_selection=True).map(lambda plan: plan.request)


def blocker_combinations() -> st.SearchStrategy[tuple[bool, bool, bool]]:
    """Which of clarification, confirmation and condition reasons are present."""
    return st.tuples(st.booleans(), st.booleans(), st.booleans())


def core_candidates(items: int | None = None, combinations: Sequence[tuple[bool, bool, bool]] | None = None
                    ) -> st.SearchStrategy[dict[str, Any]]:  # fmt: skip
    """Valid core candidates; ``combinations`` fixes the blockers of each intent in order."""
    return _generated(_candidates.core_candidate, items, combinations)


def data_candidates(payload: dict[str, Any], data: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Valid data candidates for a data task ``payload`` (decoded), returning ``data`` if given."""
    return _generated(_candidates.data_candidate, payload, data)


def broken_candidates(subject: _faults.Subject, faults: Sequence[str] | None = None, include_heavy: bool = False,
                      lone_surrogates: bool = True) -> st.SearchStrategy[tuple[str, _faults.Broken]]:  # fmt: skip
    """``(fault name, Broken)``: the subject's candidate broken in one named way.

    ``lone_surrogates=False`` leaves out the faults whose text holds a raw lone surrogate,
    which reaches a server only over some transports (D-MCP-008, D-CNF-053).
    """
    names = [n for n in (faults or _faults.faults_for(subject, include_heavy)) if _faults.CANDIDATE_FAULTS[n].applies(subject)
             and (lone_surrogates or n not in _faults.LONE_SURROGATE_FAULTS)]  # fmt: skip
    if not names:
        raise ValueError("no fault applies to this candidate")
    return _generated(_faults.broken, subject, names)


def cancel_details(total_bytes: int, lone_surrogates: bool = True) -> st.SearchStrategy[str]:
    """Details of exactly ``total_bytes`` UTF-8 bytes (lone surrogates count 3, D-LIM-006).

    ``lone_surrogates=False`` draws well-formed text only: what every transport carries.
    """
    return _generated(_texts.detail_with_bytes, total_bytes, lone_surrogates)


def malformed_requests(op: str, **ids: Any) -> st.SearchStrategy[tuple[str, Any]]:
    """``(defect, request)`` for ``op`` (prepare / accept / cancel), wrong in one named way.

    ``ids``: ``instance``, ``job_id``, ``step_token``, ``heavy`` (10 MB texts),
    ``objects_only`` (no non-object requests: what an MCP transport can carry) and
    ``lone_surrogates`` (False: no text holding one, which only some transports carry).
    """
    return _generated(lambda d: _requests.malformed_request(d, op, **ids))


def wrong_type_values() -> st.SearchStrategy[Any]:
    return _generated(_requests.wrong_type_value)


def bridge_replies(valid: bool = True) -> st.SearchStrategy[Any]:
    """Real replies of the reference; with ``valid=False``, ``(defect, requirement, value)``."""
    if valid:
        return _generated(_reference_reply)
    return _generated(lambda d: _replies.malformed_reply(d, _reference_reply(d)))


def mcp_tool_results(valid: bool = True) -> st.SearchStrategy[Any]:
    """CallToolResult objects (content, structuredContent, isError); malformed ones as ``(defect, requirement, value)``."""
    if valid:
        return _generated(lambda d: _replies.tool_result(_reference_reply(d)))
    return _generated(lambda d: _replies.malformed_tool_result(d, _reference_reply(d)))


def _generated(generator: Callable[..., T], *args: Any) -> st.SearchStrategy[T]:
    """``generator(draw, *args)`` as a strategy: each of its choices is a native Hypothesis draw."""

    @st.composite
    def strategy(draw: Any) -> T:
        draw(st.just(None))  # a generator may make no choice at all; composite warns when none is drawn
        return generator(_HypothesisDraw(draw), *args)

    return strategy()
