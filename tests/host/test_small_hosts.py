"""The README's short hosts: a dozen lines of Python, ten of JavaScript, both pass at normative level.

They follow the seed's rules and nothing more: where the reference host makes a choice the
seed leaves open (cancel with `cancelled` when the model fails, D-HST-003; ask the model
again after a size rejection, D-HST-004; cancel after a protocol-layer failure, D-HST-005)
they simply stop, and the judge says so at reference level only.  That is the difference
between the levels, shown by two real hosts (issue 26: "prove the host levels").
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.host.host_support import HOSTS, NODE, NODE_DIR, judge_here, scenario_path

# The scenarios where a host that only follows the seed parts from the reference host, and one where it does not.
CHOSEN = ["HST-001", "HST-007", "HST-011", "HST-012", "HST-013"]
EXPECTED_REFERENCE_NOTES = {
    "HST-001": set(),
    "HST-007": {"D-HST-004", "D-HST-009"},
    "HST-011": {"D-HST-003"},
    "HST-012": {"D-HST-005"},
    "HST-013": {"D-HST-005"},
}
SMALL_HOSTS = {
    "python": f"{shlex.quote(sys.executable)} {shlex.quote(str(HOSTS / 'ten_line_host.py'))} {{server}} {{model}} {{request}}",
    "javascript": f"{shlex.quote(str(NODE))} {shlex.quote(str(NODE_DIR / 'ten_line_host.mjs'))} {{server}} {{model}} {{request}}",
}


@pytest.mark.parametrize("language", sorted(SMALL_HOSTS))
def test_a_short_host_passes_at_normative_level_and_differs_from_the_reference_where_the_seed_allows(language, tmp_path, fork_socket):
    if language == "javascript" and not NODE.exists():
        pytest.skip("node and the TypeScript SDK are not installed")
    report_file = tmp_path / "report.json"
    args = ["--command", SMALL_HOSTS[language], "--json", str(report_file)]
    for ident in CHOSEN:
        args += ["--scenario", str(scenario_path(ident))]
    done = judge_here(fork_socket, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text("utf-8"))
    notes = {s["id"]: {v["rule"] for v in s["violations"]} for s in report["scenarios"]}
    assert notes == EXPECTED_REFERENCE_NOTES
    assert all(v["level"] == "reference" for s in report["scenarios"] for v in s["violations"])
    # At reference level the same run fails.
    strict = judge_here(fork_socket, *args[:2], "--level", "reference", "--scenario", str(scenario_path("HST-011")))
    assert strict.returncode == 1 and "D-HST-003 (reference) HST-011" in strict.stdout


def test_the_readme_section_quotes_the_short_hosts_verbatim():
    readme = (HOSTS.parents[1] / "README.md").read_text("utf-8")
    start = readme.index("\n## Test your host\n")
    section = readme[start:readme.index("\n## ", start + 1)]
    assert f"```python\n{(HOSTS / 'ten_line_host.py').read_text('utf-8')}```" in section
    assert f"```javascript\n{(NODE_DIR / 'ten_line_host.mjs').read_text('utf-8')}```" in section
    assert len((NODE_DIR / "ten_line_host.mjs").read_text("utf-8").splitlines()) <= 10
