"""``intentref check`` rebuilds the step a host received (``Job.at_step``), exactly.

The check command judges a candidate offline by standing a reference job at the task's
step; that job must be at the same step as the runtime's: the same task (stage,
instructions, payload, format), the same repairs left.  Each task here comes from a real
Bridge flow: the seed order example's core and data tasks and their repair tasks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from intentref import Intent
from intentref.bridge import create_intent_bridge
from intentref.core.job import Job
from intentref.core.policy import REFERENCE_POLICY
from intentref.core.request import ParseRequest
from intentref.core.schema_subset import Definition
from intentref.devtools.examples import ORDER_CORE, ORDER_INPUT, ORDER_SCHEMA
from intentref.suite.commands.check import judge, rebuild


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _tasks(repair_attempts: int = 1) -> dict[str, dict[str, Any]]:
    """core, core repair, data and data repair tasks of one instance, as a host receives them."""
    intent = Intent({"language": "zh-CN", "schema": ORDER_SCHEMA, "repairAttempts": repair_attempts})
    session = create_intent_bridge({"instances": {"order": intent}}).connect()
    core = session.prepare({"instance": "order", "input": ORDER_INPUT, "context": "背景：老客户。"})
    core_repair = session.accept({"jobId": core["jobId"], "stepToken": core["stepToken"], "candidateText": "{}"})
    data = session.accept({"jobId": core["jobId"], "stepToken": core_repair["stepToken"], "candidateText": _text(ORDER_CORE)})
    data_repair = session.accept({"jobId": core["jobId"], "stepToken": data["stepToken"], "candidateText": "[]"})
    tasks = {"core": core, "core repair": core_repair, "data": data, "data repair": data_repair}
    assert [t["kind"] for t in tasks.values()] == ["task"] * 4, tasks
    assert [t["stage"] for t in tasks.values()] == ["core", "core", "data", "data"]
    return tasks


@pytest.mark.parametrize("name", ["core", "core repair", "data", "data repair"])
def test_a_rebuilt_job_stands_at_the_task_it_was_rebuilt_from(name):
    # spec: R-RPY-002 R-RPY-005 D-PAY-004 -- same stage, instructions, payload (to the byte) and format.
    task = _tasks()[name]
    job = rebuild(task)
    written = job.model_request()
    assert (job.task.stage, written["instructions"], written["payload"], written["format"]) == (
        task["stage"], task["instructions"], task["payload"], task["format"])  # fmt: skip


@pytest.mark.parametrize(("name", "bad"), [("core", "{}"), ("data", "[]")])
def test_a_step_with_a_repair_left_offers_the_repair(name, bad):
    # spec: R-ERR-026 R-ERR-027 D-PAY-004 -- the first contract fault of a stage gets a repair task.
    reply, _ = judge(_tasks()[name], bad)
    assert reply["kind"] == "task" and reply["stage"] == _tasks()[name]["stage"]
    assert json.loads(reply["payload"])["repair"]["attempt"] == 1


@pytest.mark.parametrize(("name", "bad"), [("core repair", "{}"), ("data repair", "[]")])
def test_a_repair_step_with_no_repair_left_fails(name, bad):
    # spec: R-ERR-026 R-ERR-027 D-PAY-004 -- the repair was the last one allowed: the same fault now ends the job.
    reply, _ = judge(_tasks()[name], bad)
    assert reply["kind"] == "error" and reply["error"]["code"] == "MODEL_OUTPUT_INVALID"


def test_at_step_defaults_to_no_repairs_spent():
    # A job stood at a core step without saying otherwise has spent none of its repairs.
    request = ParseRequest(ORDER_INPUT, (), None)
    job = Job.at_step(Definition.from_schema(ORDER_SCHEMA, REFERENCE_POLICY), "zh-CN", 1, request)
    outcome = job.submit("{}")
    assert outcome.task is not None and json.loads(job.model_request()["payload"])["repair"]["attempt"] == 1
