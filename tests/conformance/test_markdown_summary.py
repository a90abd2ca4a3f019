"""The Markdown summary (issue 39, D-CNF-061): short, read by a Markdown renderer, appended to the job summary.

Every run here is a real ``intentref`` process; its Markdown is parsed with markdown-it
(CommonMark with GitHub's tables), so a table that does not parse, a missing heading or a
failed case left out fails the test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intentref.suite.reports.markdown import LISTED_PROBLEMS, summary
from intentref.suite.reports.model import Report, Row
from tests.conformance.ci_support import cases_by_id, intentref, parse, read
from tests.host.host_support import PYTHON_HOST, python_command, reaching_host, scenario_path

OUTCOME_COLUMNS = ["cases", "passed", "failed", "unsupported", "errored"]


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("faulty")
    step_summary = folder / "step-summary.md"
    step_summary.write_text("# An earlier step's summary\n", "utf-8")
    done = intentref("conformance", "--target", "faulty:ids_from_zero", "--only", "BRG-*",
                     "--json", str(folder / "r.json"), "--markdown", str(folder / "s.md"),
                     env={"GITHUB_STEP_SUMMARY": str(step_summary)})  # fmt: skip
    return {"done": done, "report": json.loads(read(folder / "r.json")), "markdown": read(folder / "s.md"),
            "step_summary": read(step_summary)}  # fmt: skip


def test_a_failing_run_summary_parses_with_its_counts_and_every_failed_case(faulty_run: dict[str, Any]) -> None:
    assert faulty_run["done"].returncode == 1, faulty_run["done"].stderr
    report, page = faulty_run["report"], parse(faulty_run["markdown"])
    summary_counts = report["summary"]
    assert summary_counts["failed"] > 0
    assert page.headings[0] == (2, f"intentref conformance: {summary_counts['passed']} passed, {summary_counts['failed']} failed")
    assert (3, "By level") in page.headings and (3, f"Failed and errored ({summary_counts['failed']})") in page.headings
    levels = page.table_under["By level"]
    assert levels[0] == ["level", *OUTCOME_COLUMNS]
    for level, *numbers in levels[1:]:
        tally = summary_counts["byLevel"][level]
        assert numbers == [str(sum(tally.values())), *(str(tally[name]) for name in OUTCOME_COLUMNS[1:])]
    failed = [case for case in report["cases"] if case["outcome"] == "failed"]
    for case in failed:
        item = next(item for item in page.items if item.startswith(case["id"] + " failed"))
        assert case["mismatches"][0] in item  # the one-line diff
        assert all(requirement in item for requirement in case["requirements"])
    assert len([item for item in page.items if item.split(" ")[0] in cases_by_id(report)]) == len(failed)
    assert "reference with fault ids_from_zero" in faulty_run["markdown"].replace("\\", "")  # the target


def test_the_summary_is_appended_to_the_job_summary_after_what_was_there(faulty_run: dict[str, Any]) -> None:
    step_summary = faulty_run["step_summary"]
    assert step_summary.startswith("# An earlier step's summary\n")
    assert step_summary.endswith(faulty_run["markdown"])


def test_unsupported_cases_are_grouped_by_reason_and_an_unwritable_job_summary_is_a_warning(tmp_path: Path) -> None:
    done = intentref("conformance", "--only", "BRG-*", "--json", str(tmp_path / "r.json"),
                     "--markdown", str(tmp_path / "s.md"),
                     env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no-such-folder" / "summary.md")})  # fmt: skip
    assert done.returncode == 0, done.stderr  # the job summary is a convenience, never the verdict
    assert "warning: $GITHUB_STEP_SUMMARY" in done.stderr
    report = json.loads(read(tmp_path / "r.json"))
    unsupported = [case for case in report["cases"] if case["outcome"] == "unsupported"]
    assert unsupported  # over stdio, BRG-0018 needs two connections to one Bridge
    page = parse(read(tmp_path / "s.md"))
    rows = page.table_under[f"Unsupported ({len(unsupported)}), by reason"]
    assert rows[0] == ["Cases", "Reason"]
    reasons = {case["detail"] for case in unsupported}
    assert {row[1] for row in rows[1:]} == reasons
    assert sum(int(row[0]) for row in rows[1:]) == len(unsupported)
    assert not any(heading.startswith("Failed") for _, heading in page.headings)


def test_a_table_cell_and_a_diff_line_keep_markdowns_special_characters() -> None:
    tricky = "got `x` | *y* <z> [w](v)"
    rows = [Row(id=f"ODD-{n:04d}", outcome="failed", area="a|b", level="normative", lines=(tricky,),
                requirements=("R-BRG-001",)) for n in range(LISTED_PROBLEMS + 3)]  # fmt: skip
    page = parse(summary(Report("intentref conformance", "t", {"target": "x|y"}, rows)))
    by_level = page.table_under["By level"]
    assert all(len(row) == len(OUTCOME_COLUMNS) + 1 for row in by_level)  # no cell split by a "|"
    assert page.code.count(tricky) == LISTED_PROBLEMS  # each diff line intact, as code
    assert page.items[-1] == "… and 3 more (the JSON, JUnit and HTML reports list them all)"


def test_the_host_judge_writes_the_same_summary(tmp_path: Path) -> None:
    # It starts the server it is given, so it reached it; then it prepares nothing and prints no
    # reply: the loop rule (R-HST-016) is its first violation, the contract (D-HST-001) the next.
    host = reaching_host("echo not json")
    step_summary = tmp_path / "step.md"
    done = intentref("host", "--command", host, "--scenario", str(scenario_path("HST-002")),
                     "--markdown", str(tmp_path / "h.md"), env={"GITHUB_STEP_SUMMARY": str(step_summary)})  # fmt: skip
    assert done.returncode == 1, done.stderr
    text = read(tmp_path / "h.md")
    page = parse(text)
    assert page.headings[0] == (2, "intentref host: 0 of 1 scenarios pass at normative level")
    assert any(item.startswith("HST-002 failed") and "R-HST-016 (normative) HST-002 outcome" in item
               for item in page.items), page.items  # fmt: skip
    assert read(step_summary).endswith(text)


def test_the_matrix_summary_has_a_row_per_implementation_with_its_counts(tmp_path: Path) -> None:
    done = intentref("matrix", "--target", "ref=in-process", "--target", "ids=faulty:ids_from_zero", "--only",
                     "BRG-000*", "--out", str(tmp_path / "m"), "--markdown", str(tmp_path / "m.md"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(read(tmp_path / "m" / "matrix.json"))
    table = parse(read(tmp_path / "m.md")).tables[0]
    assert table[0][:3] == ["implementation", "kind", "normative passed"]
    for row, impl in zip(table[1:], document["implementations"], strict=True):
        normative = impl["summary"]["normative"]
        assert row[0] == impl["name"]
        assert row[2:6] == [str(normative[name]) for name in ("passed", "failed", "unsupported", "errored")]
    assert table[1][3] == "0" and int(table[2][3]) > 0  # the faulty one fails normative cases


@pytest.mark.parametrize("command", [["conformance"], ["host", "--command", python_command(PYTHON_HOST)],
                                     ["matrix", "--include", "reference"]])  # fmt: skip
def test_a_markdown_path_in_a_missing_folder_is_one_line_and_status_2(command: list[str]) -> None:
    done = intentref(*command, "--markdown", "/no/such/folder/s.md", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "/no/such/folder/s.md" in lines[0], done.stderr
