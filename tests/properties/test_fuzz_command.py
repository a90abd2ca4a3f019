"""``intentref fuzz``: reproducible files, honest manifests, clean replays, caught disagreements."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from intentref import cli
from intentref import properties as ip
from intentref.suite.properties.fuzz_cases import CASE_KINDS

COUNT = 12


def _write(folder: pathlib.Path, seed: int, *extra: str) -> pathlib.Path:
    assert cli.main(["fuzz", "--seed", str(seed), "--count", str(COUNT), "--out", str(folder), *extra]) == 0
    return folder


def _files(folder: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.json"))}


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return _write(tmp_path_factory.mktemp("fuzz") / "a", 11)


def test_the_same_seed_writes_the_same_bytes(cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    again = _files(_write(tmp_path / "b", 11))
    assert again == _files(cases)
    assert len(again) == 3 * COUNT + 1


def test_another_seed_writes_other_cases(cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    other = _files(_write(tmp_path / "c", 12))
    assert other.keys() == _files(cases).keys()
    assert sum(other[name] != data for name, data in _files(cases).items()) >= 3 * COUNT - 3


def test_a_case_does_not_depend_on_the_count(cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert cli.main(["fuzz", "--seed", "11", "--count", "3", "--out", str(tmp_path), "--kind", "sessions"]) == 0
    for name in ("s0000.json", "s0001.json", "s0002.json"):
        assert (tmp_path / "sessions" / name).read_bytes() == (cases / "sessions" / name).read_bytes()
    assert not (tmp_path / "candidates").exists()


def test_the_manifest_counts_what_was_written(cases: pathlib.Path) -> None:
    manifest = json.loads((cases / "manifest.json").read_text("utf-8"))
    assert manifest["seed"] == 11 and manifest["kinds"] == {kind: COUNT for kind in CASE_KINDS}
    candidates = [json.loads(p.read_text("utf-8")) for p in sorted((cases / "candidates").glob("*.json"))]
    replies = [json.loads(p.read_text("utf-8")) for p in sorted((cases / "replies").glob("*.json"))]
    assert sum(manifest["faults"].values()) == len(candidates) == COUNT
    for name, count in manifest["faults"].items():
        assert name == "valid" or name in ip.CANDIDATE_FAULTS
        assert count == sum((c["fault"] or "valid") == name for c in candidates)
    assert sum(manifest["defects"].values()) == len(replies) == COUNT
    for name in manifest["defects"]:
        assert name in ip.REPLY_DEFECTS or name in ip.MCP_DEFECTS or name in ("valid.bridge", "valid.mcp")


def test_candidate_cases_hold_a_task_a_text_and_the_reference_verdict(cases: pathlib.Path) -> None:
    for path in sorted((cases / "candidates").glob("*.json")):
        case = json.loads(path.read_text("utf-8"))
        assert case["task"]["kind"] == "task" and case["task"]["jobId"] == "<jobId:1>"
        assert case["reply"]["kind"] == case["expected"]["kind"]
        if case["expected"]["kind"] == "error":
            assert case["reply"]["error"]["code"] == case["expected"]["code"]
        if case["fault"] is None:
            assert case["expected"]["kind"] in ("task", "result")  # valid: the next task or the result


def test_reply_cases_say_whether_they_are_valid(cases: pathlib.Path) -> None:
    for path in sorted((cases / "replies").glob("*.json")):
        case = json.loads(path.read_text("utf-8"))
        value = case["value"]
        if case["valid"] and case["layer"] == "bridge":
            assert ip.is_bridge_reply(value)
        if case["valid"] and case["layer"] == "mcp":
            assert json.loads(value["content"][0]["text"]) == value["structuredContent"]
            assert value["isError"] == (value["structuredContent"]["kind"] == "error")
        if not case["valid"]:
            assert case["defect"] and case["requirement"].startswith("R-")


def test_replay_is_clean_against_the_reference(cases: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fuzz", "--replay", str(cases), "--in-process"]) == 0
    assert f"replayed {2 * COUNT} cases" in capsys.readouterr().out


def test_replay_is_clean_over_stdio(cases: pathlib.Path) -> None:
    assert cli.main(["fuzz", "--replay", str(cases), "--stdio", "reference"]) == 0


def test_loose_replay_compares_verdicts_only(cases: pathlib.Path) -> None:
    assert cli.main(["fuzz", "--replay", str(cases), "--in-process", "--loose"]) == 0


def test_replay_reports_a_disagreement(cases: pathlib.Path, tmp_path: pathlib.Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _write(tmp_path, 11, "--kind", "candidates")
    path = tmp_path / "candidates" / "c0000.json"
    case: dict[str, Any] = json.loads(path.read_text("utf-8"))
    case["steps"][-1]["expect"] = {"$kindNot": case["expected"]["kind"]}
    path.write_text(json.dumps(case), "utf-8")
    assert cli.main(["fuzz", "--replay", str(tmp_path), "--in-process"]) == 1
    assert "c0000" in capsys.readouterr().out


def test_replay_gives_the_same_verdicts_over_several_workers(cases: pathlib.Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    # A faulty implementation, so that there are disagreements to keep in order, not only agreements.
    replays = {}
    for jobs in ("1", "3"):
        assert cli.main(["fuzz", "--replay", str(cases), "--target", "faulty:ids_from_zero", "--jobs", jobs]) == 1
        replays[jobs] = capsys.readouterr().out
    assert replays["1"] == replays["3"]
    disagreements = replays["1"].splitlines()[:-1]
    assert disagreements and all(" disagree" not in line for line in disagreements)
    assert [line.split(" ")[0] for line in disagreements] == sorted(line.split(" ")[0] for line in disagreements)


def test_replay_refuses_a_jobs_count_below_one(cases: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["fuzz", "--replay", str(cases), "--jobs", "0"])
    assert exited.value.code == 2 and "must be at least 1, got 0" in capsys.readouterr().err


def test_large_and_ill_formed_texts_are_written_as_generators(tmp_path: pathlib.Path) -> None:
    from intentref.suite.cases.values import History, generate

    assert cli.main(["fuzz", "--seed", "3", "--count", "60", "--out", str(tmp_path), "--kind", "candidates"]) == 0
    seen = set()
    for path in sorted((tmp_path / "candidates").glob("*.json")):
        case = json.loads(path.read_text("utf-8"))
        text = generate(case["candidateText"], History())
        assert isinstance(text, str)
        if case["fault"] in ("text.oversize", "json.deep_nesting", "text.lone_surrogate"):
            seen.add(case["fault"])
            assert isinstance(case["candidateText"], dict) or len(text) < 4096
    assert path.stat().st_size < 2_000_000  # a megabyte candidate is a $repeat, not a megabyte file
