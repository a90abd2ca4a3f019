"""``intentref check``: one candidate against one task, offline, as the reference judges it."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from intentref import Intent, cli
from intentref.bridge import create_intent_bridge
from intentref.suite.cases.values import History, generate
from intentref.suite.commands.check import judge
from intentref.suite.properties.differential import well_formed_json
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


# --------------------------------------------------------------------------- file and argument problems


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert captured.out == ""
    return lines[0]


def test_a_candidate_file_that_does_not_exist_is_one_line_and_status_2(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    core, _ = _tasks()
    (tmp_path / "task.json").write_text(json.dumps(core, ensure_ascii=False), "utf-8")
    status = cli.main(["check", str(tmp_path / "task.json"), str(tmp_path / "missing.txt")])
    assert status == 2
    assert _err_line(capsys) == f"intentref check: {tmp_path / 'missing.txt'}: cannot read it (No such file or directory)"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read it (No such file or directory)"),
        (b"{not json", "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        (b'"\xff"', "not UTF-8 text"),
    ],
)
def test_a_task_file_that_cannot_be_read_is_one_line_and_status_2(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], content: bytes | None, problem: str
) -> None:
    path = tmp_path / "task.json"
    if content is not None:
        path.write_bytes(content)
    (tmp_path / "c.txt").write_text("{}", "utf-8")
    assert cli.main(["check", str(path), str(tmp_path / "c.txt")]) == 2
    assert _err_line(capsys) == f"intentref check: {path}: {problem}"


def test_a_task_whose_payload_cannot_be_rebuilt_is_status_2(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    core, _ = _tasks()
    (tmp_path / "task.json").write_text(json.dumps({**core, "payload": "{}"}), "utf-8")
    (tmp_path / "c.txt").write_text(dumps(ORDER_CORE), "utf-8")
    assert cli.main(["check", str(tmp_path / "task.json"), str(tmp_path / "c.txt")]) == 2
    assert "the task's payload cannot be rebuilt (KeyError" in _err_line(capsys)


def test_a_task_without_a_candidate_is_status_2(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    core, _ = _tasks()
    (tmp_path / "task.json").write_text(json.dumps(core, ensure_ascii=False), "utf-8")
    assert cli.main(["check", str(tmp_path / "task.json")]) == 2
    assert "only a fuzz case carries its own" in _err_line(capsys)


def test_repair_attempts_outside_what_an_instance_allows_is_a_usage_error(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["check", str(tmp_path / "t.json"), "-", "--repair-attempts", "9"])
    assert exited.value.code == 2
    assert "must be from 0 to 8" in capsys.readouterr().err


# --------------------------------------------------------------------------- fuzz cases as input


def _fuzz_cases(tmp_path: pathlib.Path) -> list[tuple[pathlib.Path, dict[str, Any]]]:
    assert cli.main(["fuzz", "--seed", "4", "--count", "60", "--out", str(tmp_path), "--kind", "candidates"]) == 0
    paths = sorted((tmp_path / "candidates").glob("*.json"))
    return [(path, json.loads(path.read_text("utf-8"))) for path in paths]


def test_a_fuzz_case_is_judged_with_its_own_instance_and_candidate(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The cases where the instance's repairAttempts (0) changes the verdict: the default (1)
    # would answer a repair task where the case's Bridge answered an error.
    cases = _fuzz_cases(tmp_path)
    telling = [(path, case) for path, case in cases
               if case["instances"][case["instance"]].get("repairAttempts", 1) == 0
               and "repair" not in json.loads(case["task"]["payload"]) and case["reply"]["kind"] == "error"
               and case["reply"]["error"]["code"] == "MODEL_OUTPUT_INVALID"]  # fmt: skip
    assert telling, "seed 4 must give a MODEL_OUTPUT_INVALID case on an instance without repairs"
    for path, case in telling:
        capsys.readouterr()
        status = cli.main(["check", str(path)])  # no CANDIDATE: the case's own
        captured = capsys.readouterr()
        assert status == 1, captured.err
        assert well_formed_json(json.loads(captured.out)) == case["reply"], path.name
        assert "note: this reply agrees with the case's expected" in captured.err


def test_every_fuzz_case_agrees_with_itself_through_the_command(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path, _ in _fuzz_cases(tmp_path):
        capsys.readouterr()
        status = cli.main(["check", str(path)])
        captured = capsys.readouterr()
        reply = json.loads(captured.out)
        assert status == (1 if reply["kind"] == "error" else 0)
        assert "differs from" not in captured.err, (path.name, captured.err)
        assert "note: " in captured.err
