"""JSON Pointer escaping, and every key of a generated schema reachable by its escaped path.

# spec: R-DAT-005, R-DAT-006, R-ERR-014, R-ERR-015, R-SRC-010, R-SRC-011, R-RES-047, R-RES-048

The reachability properties go through the target: a real data candidate names each
leaf by its escaped pointer (evidence) and each selected field by its /data path (field
results), the target accepts it, and every one of those pointers resolves in the data of
the result.  Keys with "~", "/", "~1", "~0" and the empty string are drawn first.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from intentref import properties as ip
from intentref import strategies as ist
from intentref.core import jsonpointer
from intentref.core.jsontext import dumps_compact

REQUIREMENTS = ("R-DAT-005", "R-DAT-006", "R-SRC-010", "R-SRC-011")
# The catalog's generated schemas and instances.json's escaped-keys instance.
SCHEMA_INSTANCES = ["gen-00", "escaped", *sorted(n for n in ip.catalog_instances() if n.startswith("gen-"))[1:]]


@given(ist.pointer_tokens())
def test_join_then_split_gives_the_tokens_back(tokens: list[str]) -> None:
    # spec: R-DAT-006 -- the escaping is reversible, so every key has exactly one pointer.
    assert jsonpointer.split(jsonpointer.join(tokens)) == tokens


@given(st.one_of(ist.keys(), st.text()))
def test_tilde_is_escaped_before_slash(key: str) -> None:
    # spec: R-DAT-006, R-ERR-015 -- "~" becomes "~0" first, then "/" becomes "~1".
    escaped = jsonpointer.escape_token(key)
    assert "/" not in escaped
    assert all(escaped[i + 1 : i + 2] in ("0", "1") for i, char in enumerate(escaped) if char == "~")
    assert escaped == key.replace("~", "~0").replace("/", "~1")
    assert jsonpointer.unescape_token(escaped) == key
    if "/" in key:
        # The other order turns "/" into "~1" and then into "~01": it names another key.
        wrong = key.replace("/", "~1").replace("~", "~0")
        assert jsonpointer.unescape_token(wrong) != key


def test_the_escaping_edge_cases_by_name() -> None:
    # spec: R-DAT-006 -- the four keys the issue names, written out.
    assert [jsonpointer.join(["data", k]) for k in ("~", "/", "~1", "")] == ["/data/~0", "/data/~1", "/data/~01", "/data/"]
    assert jsonpointer.split("/data/~01") == ["data", "~1"]


def _to_data_task(session: ip.ExampleSession, plan: ip.RequestPlan, core: dict[str, Any]) -> dict[str, Any]:
    task = session.prepare(plan.request)
    assert task["kind"] == "task" and task["stage"] == "core", task
    data_task = session.accept(ip.step_of(task, dumps_compact(core)))
    assert data_task["kind"] == "task" and data_task["stage"] == "data", data_task
    return data_task


def _check_reachable(candidate: dict[str, Any], result: dict[str, Any], payload: dict[str, Any]) -> None:
    document = {"data": result["data"]}
    for entry in candidate["evidence"]:  # every evidence pointer names the leaf it covers
        tokens = jsonpointer.split(entry["path"])
        assert tokens is not None and jsonpointer.exists(document, tokens), entry["path"]
    for entry in candidate["fieldResults"]:  # every selected field by its /data path
        tokens = jsonpointer.split(entry["path"])
        assert tokens is not None and len(tokens) == 2 and tokens[1] in payload["selectedFields"], entry["path"]
        assert jsonpointer.exists(document, tokens) == (entry["status"] == "extracted")
    covered = [e["path"] for e in candidate["evidence"]]
    for path in ip.schema_paths(payload["selectedSchema"]):  # every declared key, nested ones too
        tokens = jsonpointer.split(path)
        assert tokens is not None and jsonpointer.exists(document, tokens), f"{path} is not in the result's data"
        assert any(c == path or c.startswith(path + "/") for c in covered), f"no evidence reaches {path}"


@given(data=st.data())
def test_every_schema_key_is_reachable_through_the_target(intentref_target: Any, data: st.DataObject) -> None:
    # spec: R-DAT-005, R-DAT-006, R-SRC-010, R-SRC-011, R-RES-048
    name = data.draw(st.sampled_from(ip.available(intentref_target, SCHEMA_INSTANCES)), label="instance")
    plan = data.draw(ist.plans(name, complete=True), label="plan")
    core = data.draw(ist.core_candidates(), label="core")
    with ip.Example(intentref_target, requirements=REQUIREMENTS) as ex:
        session = ex.session()
        data_task = _to_data_task(session, plan, core)
        payload = json.loads(data_task["payload"])
        candidate = data.draw(ist.data_candidates(payload, plan.data), label="data candidate")
        reply = session.accept(ip.step_of(data_task, dumps_compact(candidate)))
    assert reply["kind"] == "result", reply
    assert reply["result"]["data"] == plan.data
    _check_reachable(candidate, reply["result"], payload)


def _wrongly_escaped(path: str) -> str:
    """``path`` re-escaped in the wrong order ("/" before "~"), token by token."""
    tokens = jsonpointer.split(path)
    assert tokens is not None
    return "".join("/" + t.replace("/", "~1").replace("~", "~0") for t in tokens)


@given(data=st.data())
def test_a_wrongly_escaped_path_is_never_accepted(intentref_target: Any, data: st.DataObject) -> None:
    # spec: R-DAT-006, R-ERR-015 -- "/data/a~01b" is not the key "a/b"; the candidate is repaired or fails.
    name = data.draw(st.sampled_from(ip.available(intentref_target, ["gen-00", "escaped"])), label="instance")
    plan = data.draw(ist.plans(name, complete=True), label="plan")
    core = data.draw(ist.core_candidates(), label="core")
    with ip.Example(intentref_target, requirements=("R-DAT-006", "R-ERR-015")) as ex:
        session = ex.session()
        data_task = _to_data_task(session, plan, core)
        payload = json.loads(data_task["payload"])
        candidate = data.draw(ist.data_candidates(payload, plan.data), label="data candidate")
        bad = [i for i, e in enumerate(candidate["evidence"]) if _wrongly_escaped(e["path"]) != e["path"]]
        if not bad:
            return  # nothing in this selection has a "/" to mis-escape
        index = data.draw(st.sampled_from(bad), label="entry")
        leaf = candidate["evidence"][index]["path"]
        candidate["evidence"][index]["path"] = _wrongly_escaped(leaf)
        reply = session.accept(ip.step_of(data_task, dumps_compact(candidate)))
    assert reply["kind"] != "result", reply
    with ip.decided("D-ERR-007", "D-ERR-008", "D-PAY-004"):  # which issue paths a refusal reports, and where
        paths = ip.issue_paths(reply)
        assert f"/evidence/{index}/path" in paths or leaf in paths, paths


@given(definition=ist.schemas(), data=st.data())
def test_fresh_schemas_in_process(intentref_target: Any, definition: dict[str, Any], data: st.DataObject) -> None:
    # spec: R-DAT-006, R-SRC-010 -- a new schema per example (a run each: in-process targets only).
    if intentref_target.transport != "in-process":
        return
    instances = {"fresh": {"language": "en", "schema": definition, "repairAttempts": 0}}
    plan = data.draw(ist.plans("fresh", definition, complete=True), label="plan")
    core = data.draw(ist.core_candidates(), label="core")
    with ip.Example(intentref_target, instances=instances, fresh=True, requirements=REQUIREMENTS) as ex:
        session = ex.session()
        data_task = _to_data_task(session, plan, core)
        payload = json.loads(data_task["payload"])
        candidate = data.draw(ist.data_candidates(payload, plan.data), label="data candidate")
        reply = session.accept(ip.step_of(data_task, dumps_compact(candidate)))
    assert reply["kind"] == "result", reply
    _check_reachable(candidate, reply["result"], payload)
