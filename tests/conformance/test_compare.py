"""``intentref compare`` and ``conformance --compare`` (issue 39, D-CNF-060): what changed since a baseline.

The reports compared are real: the bundled reference's and a faulty implementation's, both
from ``--only 'BRG-*'`` runs.  The cases the command lists are checked against the cases whose
outcome differs between the two files, read independently here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intentref.suite.reports import changes
from intentref.suite.reports.markdown import LISTED_PROBLEMS
from tests.conformance.ci_support import cases_by_id, intentref, parse, read

FAULT = "faulty:ids_from_zero"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    paths = {"reference": folder / "reference.json", "faulty": folder / "faulty.json"}
    for name, target in (("reference", "reference"), ("faulty", FAULT)):
        done = intentref("conformance", "--target", target, "--only", "BRG-*", "--json", str(paths[name]))
        assert done.returncode in (0, 1) and paths[name].exists(), done.stderr
    return paths


def _listed(stdout: str) -> dict[str, str]:
    """Each case id the command listed, with the kind it was listed under."""
    listed: dict[str, str] = {}
    kind = ""
    for line in stdout.splitlines():
        if line.startswith("  "):
            listed[line.split()[0]] = kind
        elif line.endswith("):"):
            kind = line.split(" (", 1)[0]
    return listed


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(read(path))
    return loaded


def test_the_reference_against_a_faulty_implementation_lists_exactly_the_cases_that_differ(reports: dict[str, Path]) -> None:
    old, new = (cases_by_id(_load(reports[name])) for name in ("reference", "faulty"))
    differ = {case_id for case_id in old.keys() | new.keys()
              if (old.get(case_id) or {}).get("outcome") != (new.get(case_id) or {}).get("outcome")}  # fmt: skip
    regressed = {case_id for case_id in differ
                 if old[case_id]["outcome"] == "passed" and new[case_id]["outcome"] in ("failed", "errored")}  # fmt: skip
    assert regressed  # the fault breaks cases the reference passes
    done = intentref("compare", str(reports["reference"]), str(reports["faulty"]))
    assert done.returncode == 1, done.stdout + done.stderr
    listed = _listed(done.stdout)
    assert set(listed) == differ
    assert {case_id for case_id, kind in listed.items() if kind == "regressions"} == regressed
    assert done.stdout.startswith(f"since the baseline: {len(regressed)} regressions, ")


def test_a_report_against_itself_and_a_fix_exit_0(reports: dict[str, Path]) -> None:
    same = intentref("compare", str(reports["faulty"]), str(reports["faulty"]))
    assert same.returncode == 0, same.stdout + same.stderr
    assert _listed(same.stdout) == {}
    fixed = intentref("compare", str(reports["faulty"]), str(reports["reference"]))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixes" in set(_listed(fixed.stdout).values()) and "regressions" not in set(_listed(fixed.stdout).values())


def test_a_regression_fails_a_run_whose_failures_are_all_expected(reports: dict[str, Path], tmp_path: Path) -> None:
    failing = [c["id"] for c in _load(reports["faulty"])["cases"] if c["outcome"] in ("failed", "errored")]
    expected = tmp_path / "expected.txt"
    expected.write_text("\n".join(failing) + "\n", "utf-8")
    run = ("conformance", "--target", FAULT, "--only", "BRG-*", "--expected-failures", str(expected))
    without = intentref(*run)
    assert without.returncode == 0, without.stdout + without.stderr  # every failure is an expected one
    judged = intentref(*run, "--compare", str(reports["reference"]), "--markdown", str(tmp_path / "s.md"))
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert set(failing) <= set(_listed(judged.stdout))
    assert "### Since the baseline" in read(tmp_path / "s.md")


def test_a_file_that_is_not_a_report_is_one_line_and_status_2(reports: dict[str, Path], tmp_path: Path) -> None:
    matrix_like = tmp_path / "matrix.json"
    matrix_like.write_text(json.dumps({"format": "intentref-matrix/1", "cases": []}), "utf-8")
    broken = tmp_path / "broken.json"
    broken.write_text("{", "utf-8")
    for bad, expected in ((matrix_like, "not an intentref conformance JSON report"), (broken, "not JSON"),
                          (tmp_path / "absent.json", "No such file")):  # fmt: skip
        for argv in (("compare", str(reports["reference"]), str(bad)),
                     ("conformance", "--only", "BRG-*", "--compare", str(bad))):  # fmt: skip
            done = intentref(*argv, timeout=60)
            assert done.returncode == 2, done.stdout + done.stderr
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and expected in lines[0] and str(bad) in lines[0], done.stderr
            assert "passed" not in done.stdout  # found before any case ran


def _report(*cases: tuple[str, str]) -> dict[str, Any]:
    return changes.check({"format": changes.REPORT_FORMAT,
                          "cases": [{"id": i, "outcome": o, "level": "reference"} for i, o in cases]}, "t")  # fmt: skip


@pytest.mark.parametrize(("before", "after", "kind"), [
    ("passed", "failed", "regressions"), ("passed", "errored", "regressions"),
    ("failed", "passed", "fixes"), ("errored", "passed", "fixes"),
    ("errored", "failed", "changed failures"), ("failed", "errored", "changed failures"),
    ("passed", "unsupported", "newly unsupported"), ("failed", "unsupported", "newly unsupported"),
    ("unsupported", "passed", "no longer unsupported"), ("unsupported", "failed", "no longer unsupported"),
    (None, "failed", "added"), ("passed", None, "removed"),
])  # fmt: skip
def test_each_change_is_of_exactly_one_kind(before: str | None, after: str | None, kind: str) -> None:
    old = _report(*([("REF-0001", before)] if before else []), ("REF-0002", "passed"))
    new = _report(*([("REF-0001", after)] if after else []), ("REF-0002", "passed"))
    found = changes.between(old, new)
    assert {name: [c.id for c in listed] for name, listed in found.by_kind.items() if listed} == {kind: ["REF-0001"]}
    assert bool(found.regressions) == (kind == "regressions")  # a reference-level regression counts too


def test_the_markdown_of_many_changes_lists_the_first_and_counts_the_rest() -> None:
    many = [f"REF-{n:04d}" for n in range(LISTED_PROBLEMS + 5)]
    found = changes.between(_report(*((i, "passed") for i in many)), _report(*((i, "failed") for i in many)))
    page = parse("\n".join(found.markdown()))
    assert (4, "regressions (passed → failed or errored)") in page.headings
    assert page.code == [f"{i} (reference) passed → failed" for i in many[:LISTED_PROBLEMS]]
    assert page.items[-1] == "… and 5 more (the console lists them all)"
    assert len(found.lines()) == 2 + len(many)  # the console: the headline, the kind, every case
