"""Real replies of the reference, for the generators that start from one (fuzz, strategies).

A Bridge of the property catalog (``catalog.catalog_instances``) serves the draws.  The
catalog's schemas are generated, so this module, which needs the catalog, sits above the
other generators (no import circle; issue 18).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from intentref.bridge import create_intent_bridge
from intentref.intent import Intent
from intentref.suite.generators.candidates import core_candidate, data_candidate
from intentref.suite.generators.catalog import catalog_instances
from intentref.suite.generators.draw import Draw
from intentref.suite.generators.faults import CANDIDATE_FAULTS, Subject, faults_for
from intentref.suite.generators.requests import RequestPlan, plan_request
from intentref.suite.generators.texts import sentence, token


@functools.cache
def _reference_bridge() -> Any:
    """One in-process reference Bridge serving the property catalog, built on first use."""
    instances = {name: Intent(config) for name, config in catalog_instances().items()}
    return create_intent_bridge({"instances": instances})


def reference_session() -> Any:
    """A session of the reference Bridge that serves the property catalog."""
    return _reference_bridge().connect()


def catalog_schema(name: str) -> dict[str, Any]:
    schema_value: dict[str, Any] = catalog_instances()[name].get("schema", {})
    return schema_value


def reference_reply(d: Draw) -> dict[str, Any]:
    """A real reply of the reference (task, result or error), tokens redrawn from ``d``."""
    session = reference_session()
    try:
        name = d.choice(sorted(catalog_instances()))
        plan = plan_request(d, name, catalog_schema(name), allow_empty_selection=True)
        reply: dict[str, Any] = session.prepare(plan.request)
        for _ in range(d.integer(0, 3)):
            if reply["kind"] != "task":
                break
            reply = _advance(d, session, reply, plan)
    finally:
        session.close()
    return {**reply, **{m: token(d) for m in ("jobId", "stepToken") if m in reply}}


def _advance(d: Draw, session: Any, task: dict[str, Any], plan: RequestPlan) -> dict[str, Any]:
    ids = {"jobId": task["jobId"], "stepToken": task["stepToken"]}
    if d.integer(0, 5) == 0:
        return dict(session.cancel({"jobId": task["jobId"], "outcome": d.choice(["cancelled", "refusal", "incomplete"]),
                                    "detail": sentence(d)}))  # fmt: skip
    payload = json.loads(task["payload"])
    if task["stage"] == "core":
        subject = Subject("core", core_candidate(d), payload)
    else:
        subject = Subject("data", data_candidate(d, payload, plan.data), payload)
    text = subject.text
    if d.integer(0, 2) == 0:
        text = CANDIDATE_FAULTS[d.choice(faults_for(subject, include_heavy=False))](subject, d).text
    return dict(session.accept({**ids, "candidateText": text}))
