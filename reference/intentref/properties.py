"""What a property needs besides strategies: driving a target, reading its replies, levels.

``intentref.strategies`` holds only strategies (functions returning a Hypothesis
``SearchStrategy``), as ``hypothesis.strategies`` does; everything else a property module
uses lives here::

    from hypothesis import given
    from intentref import properties as ip, strategies as ist

    @given(ist.plans("order"), ist.core_candidates())
    def test_order_flow(intentref_target, plan, core):
        with ip.Example(intentref_target) as ex:
            task = ex.session().prepare(plan.request)
            ...
            with ip.decided("D-BRG-007"):   # an assertion on a value the reference decided
                ...

It exports what drives a target (``Example``, ``DifferentialTarget``, ...), reads replies
(``error_code``, ``step_of``, ...), sets the level of a failure (``decided``, D-CNF-021) and
what the strategies take and give (``RequestPlan``, ``Subject``, ``Broken``, ``CANDIDATE_FAULTS``).
"""

from __future__ import annotations

from intentref.mcp.replies import is_bridge_reply
from intentref.suite.generators.candidates import payload_sources
from intentref.suite.generators.catalog import (
    available,
    catalog_instances,
    generated_instances,
    separate_sessions,
)
from intentref.suite.generators.draw import HypothesisDraw, RandomDraw
from intentref.suite.generators.faults import (
    CANDIDATE_FAULTS,
    DEEP_NESTING,
    Broken,
    CandidateFault,
    Subject,
    faults_for,
)
from intentref.suite.generators.reference_replies import catalog_schema, reference_reply
from intentref.suite.generators.replies import MCP_DEFECTS, REPLY_DEFECTS, tool_result
from intentref.suite.generators.requests import RequestPlan
from intentref.suite.generators.schemas import schema_paths
from intentref.suite.generators.texts import LONE_SURROGATES, SPECIAL_KEYS
from intentref.suite.properties.case_writer import case_from_calls
from intentref.suite.properties.differential import DifferentialTarget, Divergence, canonical
from intentref.suite.properties.projection import (
    FAULT_DECISIONS,
    DecidedAssertion,
    decided,
    failure_level,
    project,
)
from intentref.suite.properties.targets import (
    Example,
    ExampleSession,
    UnsupportedByTarget,
    error_code,
    issue_paths,
    step_of,
)

__all__ = [
    "CANDIDATE_FAULTS",
    "DEEP_NESTING",
    "FAULT_DECISIONS",
    "LONE_SURROGATES",
    "MCP_DEFECTS",
    "REPLY_DEFECTS",
    "SPECIAL_KEYS",
    "Broken",
    "CandidateFault",
    "DecidedAssertion",
    "DifferentialTarget",
    "Divergence",
    "Example",
    "ExampleSession",
    "HypothesisDraw",
    "RandomDraw",
    "RequestPlan",
    "Subject",
    "UnsupportedByTarget",
    "available",
    "canonical",
    "case_from_calls",
    "catalog_instances",
    "catalog_schema",
    "decided",
    "error_code",
    "failure_level",
    "faults_for",
    "generated_instances",
    "is_bridge_reply",
    "issue_paths",
    "payload_sources",
    "project",
    "reference_reply",
    "schema_paths",
    "separate_sessions",
    "step_of",
    "tool_result",
]
