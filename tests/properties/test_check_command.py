"""``intentref check``: one candidate against one task, offline, as the reference judges it."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from intentref import Intent, cli
from intentref._property_targets import well_formed_json
from intentref.bridge import create_intent_bridge
from intentref.check import judge
from intentref.conformance.values import History, generate
from tests.conftest import ORDER_CORE, ORDER_DATA, ORDER_SCHEMA, dumps


def _tasks() -> tuple[dict[str, Any], dict[str, Any]]:
    """The seed order example's core and data tasks, as a host receives them."""
    bridge = create_intent_bridge({"instances": {"order": Intent({"language": "zh-CN", "schema": ORDER_SCHEMA})}})
    session = bridge.connect()
    core = session.prepare({"instance": "order", "input": "查询订单 000123"})
    data = session.accept({"jobId": core["jobId"], "stepToken": core["stepToken"], "candidateText": dumps(ORDER_CORE)})
    assert data["kind"] == "task" and data["stage"] == "data"
    return core, data


def _check(tmp_path: pathlib.Path, task: dict[str, Any], text: str, *extra: str,
           capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:  # fmt: skip
    (tmp_path / "task.json").write_text(json.dumps(task, ensure_ascii=False), "utf-8")
    (tmp_path / "candidate.txt").write_text(text, "utf-8")
    status = cli.main(["check", str(tmp_path / "task.json"), str(tmp_path / "candidate.txt"), *extra])
    return status, json.loads(capsys.readouterr().out)


def test_a_valid_core_candidate_is_accepted(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    core, _ = _tasks()
    status, reply = _check(tmp_path, core, dumps(ORDER_CORE), capsys=capsys)
    assert status == 0 and reply["kind"] == "result"
    assert reply["result"]["intents"][0]["status"] == "ready"


def test_a_valid_data_candidate_gives_the_seed_result(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _tasks()
    status, reply = _check(tmp_path, data, dumps(ORDER_DATA), capsys=capsys)
    assert status == 0 and reply == {"kind": "result", "result": {**json.loads(data["payload"])["checkedDefault"],
                                                                  "data": {"orderId": "000123"}}}  # fmt: skip


def test_a_broken_data_candidate_is_invalid_with_its_pointer(tmp_path: pathlib.Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _, data = _tasks()
    broken = json.loads(dumps(ORDER_DATA))
    broken["evidence"][0]["sources"][0]["quote"] = "999999"
    status, reply = _check(tmp_path, data, dumps(broken), "--repair-attempts", "0", capsys=capsys)
    assert status == 1 and reply["error"]["code"] == "MODEL_OUTPUT_INVALID" and reply["error"]["stage"] == "data"
    assert "/evidence/0/sources/0/quote" in [issue["path"] for issue in reply["error"]["issues"]]
    # With a repair left (the default) the same candidate earns a repair task naming the pointer.
    status, reply = _check(tmp_path, data, dumps(broken), capsys=capsys)
    assert status == 0 and reply["kind"] == "task" and reply["stage"] == "data"
    repair = json.loads(reply["payload"])["repair"]
    assert "/evidence/0/sources/0/quote" in [issue["path"] for issue in repair["issues"]]


def test_a_repair_task_knows_its_attempts(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    bridge = create_intent_bridge({"instances": {"order": Intent({"language": "zh-CN", "schema": ORDER_SCHEMA})}})
    session = bridge.connect()
    task = session.prepare({"instance": "order", "input": "查询订单 000123"})
    repair = session.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": "{"})
    status, reply = _check(tmp_path, repair, "{", capsys=capsys)  # attempt 1 of 1 used: no repair left
    real = session.accept({"jobId": repair["jobId"], "stepToken": repair["stepToken"], "candidateText": "{"})
    assert status == 1 and reply == real


def test_a_missing_required_value_fails_extraction(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _tasks()
    missing = {"data": {}, "evidence": [], "descriptionChecks": [],
               "fieldResults": [{"path": "/data/orderId", "status": "issue", "explanation": "没有编号。"}],
               "issues": [{"code": "DATA_REQUIRED_MISSING", "category": "business_information",
                           "path": "/data/orderId", "message": "请提供订单编号。"}]}  # fmt: skip
    status, reply = _check(tmp_path, data, dumps(missing), capsys=capsys)
    assert status == 1 and reply["error"]["code"] == "DATA_EXTRACTION_FAILED"
    assert reply["error"]["partialResult"]["data"] == {}


def test_stdin_and_tool_results(tmp_path: pathlib.Path) -> None:
    _, data = _tasks()
    envelope = {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data, "isError": False}
    (tmp_path / "result.json").write_text(json.dumps(envelope), "utf-8")
    done = subprocess.run([sys.executable, "-m", "intentref.cli", "check", str(tmp_path / "result.json"), "-"],
                          input=dumps(ORDER_DATA).encode("utf-8"), capture_output=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "result"


def test_a_file_that_is_not_a_task_is_a_usage_error(tmp_path: pathlib.Path) -> None:
    (tmp_path / "task.json").write_text('{"kind": "result", "result": {}}', "utf-8")
    (tmp_path / "c.txt").write_text("{}", "utf-8")
    assert cli.main(["check", str(tmp_path / "task.json"), str(tmp_path / "c.txt")]) == 2


def test_check_agrees_with_the_bridge_on_fuzz_cases(tmp_path: pathlib.Path) -> None:
    # Every fuzz candidate case: the offline verdict is the one the Bridge gave in the flow.
    assert cli.main(["fuzz", "--seed", "4", "--count", "40", "--out", str(tmp_path), "--kind", "candidates"]) == 0
    for path in sorted((tmp_path / "candidates").glob("*.json")):
        case = json.loads(path.read_text("utf-8"))
        text = generate(case["candidateText"], History())
        attempts = int(case["instances"][case["instance"]].get("repairAttempts", 1))
        reply, _ = judge(case["task"], text, attempts)
        reply = well_formed_json(reply)  # the case records replies as any transport delivers them
        expected = case["reply"]
        if case["task"]["stage"] == "core" and expected["kind"] == "task" and expected["stage"] == "data":
            # Offline, an accepted core candidate is its checked default: the data task carries it.
            assert reply["result"] == json.loads(expected["payload"])["checkedDefault"], path.name
            continue
        if reply["kind"] == "task":
            reply["jobId"], reply["stepToken"] = expected["jobId"], expected["stepToken"]
        assert reply == expected, path.name
