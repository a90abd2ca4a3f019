"""Each deliberately broken host fails at normative level, on the one rule it breaks.

The hosts of ``tests/hosts/broken/`` are ``python_host.py`` with one decision changed.  Each
runs on the scenarios that give it the chance to break its rule; the judge must fail it
there, name that rule (R-HST-…) and no other normative rule, and say where (the call or
the model run).  The good host's run on the same scenarios is the control: it passes them
(tests/host/test_good_host.py runs it on all of them).
"""

from __future__ import annotations

import json

import pytest

from tests.host.host_support import BROKEN, judge_here, python_command, scenario_path

# host file -> (the rule it breaks, the scenarios that show it, a word the line must hold)
BROKEN_HOSTS = {
    "stale_token": ("R-HST-007", ["HST-001", "HST-004"], "stepToken"),
    "empty_on_refusal": ("R-HST-004", ["HST-009"], "empty string"),
    "cancelled_for_refusal": ("R-HST-002", ["HST-008", "HST-009"], '"cancelled"'),
    "long_detail": ("R-HST-006", ["HST-008"], "2100 UTF-8 bytes"),
    "changed_fields_repair": ("R-HST-014", ["HST-004", "HST-005"], "complete candidate"),
    "first_task_reused": ("R-HST-001", ["HST-004"], "latest task"),
    "message_branch": ("R-HST-011", ["HST-007"], "another wording"),
    "protocol_success": ("R-HST-012", ["HST-012", "HST-013", "HST-014"], "never returned"),
    "connection_per_call": ("R-HST-005", ["HST-001"], "another connection"),
    "submits_after_result": ("R-HST-008", ["HST-001"], "after the job's result"),
    "leaves_job_open": ("R-HST-013", ["HST-011"], "left 1 active job"),
    "incomplete_as_refusal": ("R-HST-003", ["HST-010"], '"refusal", not "incomplete"'),
    "gives_up_on_repair": ("R-HST-015", ["HST-004"], "instead of submitting"),
    "stops_on_a_task": ("R-HST-016", ["HST-001", "HST-004"], "stopped on this core task"),
}


@pytest.mark.parametrize("host", sorted(BROKEN_HOSTS))
def test_a_broken_host_fails_on_its_rule_only(host, tmp_path, fork_socket):
    rule, scenarios, word = BROKEN_HOSTS[host]
    report_file = tmp_path / "report.json"
    args = ["--command", python_command(BROKEN / f"{host}.py"), "--json", str(report_file)]
    for ident in scenarios:
        args += ["--scenario", str(scenario_path(ident))]
    done = judge_here(fork_socket, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(report_file.read_text("utf-8"))
    # Every scenario chosen for it shows the break, and nothing else the seed forbids.
    for scenario in report["scenarios"]:
        rules = {v["rule"] for v in scenario["violations"] if v["level"] in ("normative", "contract")}
        assert rules == {rule}, (scenario["id"], scenario["violations"])
        assert scenario["status"] == "failed"
    # One line per violation: the rule, its level, the scenario, where, and why.
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith(rule)]
    assert lines, done.stdout
    assert all(f"{rule} (normative) HST-" in line for line in lines)
    assert any(word in line for line in lines), lines
    assert any(("call " in line) or ("model run" in line) or ("step " in line) for line in lines), lines


def test_every_broken_host_file_is_tested():
    assert sorted(p.stem for p in BROKEN.glob("*.py")) == sorted(BROKEN_HOSTS)
    assert len(BROKEN_HOSTS) >= 8
