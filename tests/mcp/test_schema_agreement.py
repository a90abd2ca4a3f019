"""The declared inputSchemas and the Bridge agree on which calls are malformed (D-MCP-006).

The MCP adapter does not validate arguments itself: it forwards them and the Bridge
answers. That is only honest if the schemas a client reads say exactly what the Bridge
refuses, so this test generates argument objects of every shape and checks both ways:
an argument object outside the schema gets a parameter-fault reply (and creates no job),
and one inside it is never refused for its shape.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from intentref import Intent
from intentref.bridge import create_intent_bridge
from intentref.mcp.server import MCP_TOOLS, call_intent_tool

SCHEMAS = {tool["name"]: jsonschema.Draft202012Validator(tool["inputSchema"]) for tool in MCP_TOOLS}
# Codes that mean "this request is malformed", as opposed to an answer about its content.
PARAMETER_FAULTS = {"INPUT_INVALID"}
# Texts whose content (not shape) the Bridge may refuse: lone surrogates, blankness, sizes.
CONTENT_POINTER = re.compile(r"^/(input|detail|context|context/\d+/content)$")

anything = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
roles = st.sampled_from(["user", "assistant", "tool", "system", "", 3])
message = st.fixed_dictionaries({}, optional={"role": roles, "content": st.text(max_size=4) | anything,
                                              "name": st.text(max_size=2)})  # fmt: skip
members = {
    "intent_prepare": {
        "instance": st.sampled_from(["default", "nope"]) | anything,
        "input": st.just("查询订单 000123") | anything,
        "context": st.none() | st.text(max_size=4) | st.lists(message | anything, max_size=2) | anything,
        "fields": st.none() | st.just([]) | st.lists(st.text(max_size=3) | anything, max_size=2) | anything,
        "extra": anything,
    },
    "intent_accept": {
        "jobId": st.text(max_size=4) | anything,
        "stepToken": st.text(max_size=4) | anything,
        "candidateText": st.text(max_size=4) | anything,
        "extra": anything,
    },
    "intent_cancel": {
        "jobId": st.text(max_size=4) | anything,
        "outcome": st.sampled_from(["cancelled", "refusal", "incomplete", "later"]) | anything,
        "detail": st.text(max_size=4) | anything,
        "extra": anything,
    },
}


# A well-formed call per tool; most generated calls are this with one or two members
# changed, so that the space right next to the schema's boundary is searched hardest.
WELL_FORMED = {
    "intent_prepare": {"instance": "default", "input": "查询订单 000123"},
    "intent_accept": {"jobId": "j", "stepToken": "t", "candidateText": "{}"},
    "intent_cancel": {"jobId": "j"},
}
DELETE = object()


@st.composite
def near_well_formed(draw: st.DrawFn, tool: str) -> dict[str, Any]:
    args = dict(WELL_FORMED[tool])
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(sorted(members[tool])))
        value = draw(st.just(DELETE) | members[tool][name])
        if value is DELETE:
            args.pop(name, None)
        else:
            args[name] = value
    return args


def arguments(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    return near_well_formed(tool) | st.fixed_dictionaries({}, optional=members[tool])


calls = st.sampled_from(sorted(members)).flatmap(lambda tool: st.tuples(st.just(tool), arguments(tool)))


@settings(max_examples=400, deadline=None)
@given(calls)
def test_schema_and_bridge_agree_on_malformed_calls(call):
    # spec: R-BRG-018 R-BRG-020 R-BRG-021 R-LIF-002
    tool, args = call
    bridge = create_intent_bridge({"instances": {"default": Intent({"language": "zh-CN"})}})
    session = bridge.connect()
    try:
        reply = call_intent_tool(session, tool, args)
        schema_valid = SCHEMAS[tool].is_valid(args)
        refused_for_shape = reply["kind"] == "error" and reply["error"]["code"] in PARAMETER_FAULTS and any(
            issue["path"] not in (None, "") for issue in reply["error"]["issues"]
        )
        if not schema_valid:
            assert reply["kind"] == "error", (tool, args, reply)
            assert reply["error"]["code"] in PARAMETER_FAULTS | {"UNKNOWN_FIELD", "BRIDGE_INSTANCE_NOT_FOUND"}, reply
            assert bridge.stats()["activeJobs"] == 0  # a refused call changes nothing
        elif refused_for_shape:
            # Inside the schema, INPUT_INVALID may only concern content the schema cannot
            # express: blank input, lone surrogates, sizes, the cancel detail budget.
            for issue in reply["error"]["issues"]:
                assert CONTENT_POINTER.match(issue["path"] or ""), (tool, args, reply)
    finally:
        session.close()
        bridge.close()
