"""The fixture suite against the reference through every target the runner has.

In process, over real stdio in both MCP eras (the bundled server, forked from the
zygote), over streamable HTTP (the bundled server on 127.0.0.1, both eras), and behind
the JSON-lines harness: every target must give each case the verdict the in-process
reference gives it, or say why it cannot ask (unsupported).  The runs start together
in threads -- they mostly wait on their servers -- and every test below reads them.

``MCP_DIVERGENCES`` would list cases where the reference's MCP adapter may answer
differently from its Bridge; it is empty, and may only shrink: an entry that agrees again
fails.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from intentref.suite.cases import baseline
from intentref.suite.cases.fixtures import Case, load_cases, select
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.execution.runner import execute
from intentref.suite.targets import mcp as mcp_targets
from intentref.suite.targets.base import InProcessTarget, load_instances
from intentref.suite.targets.harness import HarnessTarget, dumps_wire
from intentref.suite.targets.mcp_http import HttpReference, HttpTarget
from intentref.suite.targets.mcp_stdio import CommandTemplate, StdioTarget

Outcomes = dict[str, CaseOutcome]

# Case ids where an MCP target may answer differently from the in-process Bridge, with the
# reason in a comment; none at the moment.  An entry that agrees again fails the test.
MCP_DIVERGENCES: frozenset[str] = frozenset()
# The HTTP server cannot be configured per case, so only the shared-run cases can run there;
# these areas are about sessions, replay, lifecycle and the envelope, where the transport
# can make a difference (every call over HTTP is a request of its own, so not all areas).
HTTP_AREAS = ("BRG-*", "ENV-*", "IDM-*", "LIF-*", "SRV-*")
HARNESS = [sys.executable, "-m", "intentref.suite.targets.harness_reference"]
# A case with its own configuration costs a server process; the 2026 era runs them all, the
# legacy era every fourth (and every shared-run case), to keep the test budget.
# INTENTREF_CONFORMANCE_FULL=1 runs every case in both eras.
FULL = os.environ.get("INTENTREF_CONFORMANCE_FULL") == "1"


def _legacy_selection(cases: list[Case]) -> list[Case]:
    if FULL:
        return cases
    own = [c for c in cases if c.bridge_options or "setup" in c.data]
    sampled = {c.id for c in own[::4]}
    return [c for c in cases if not (c.bridge_options or "setup" in c.data) or c.id in sampled]


def _run(target_factory: Callable[[], Any], cases: list[Case]) -> Outcomes:
    target = target_factory()
    try:
        return {o.case_id: o for o in execute(cases, target)}
    finally:
        target.close()


def _http(era: str, cases: list[Case]) -> Outcomes:
    server = HttpReference(load_instances())
    try:
        return _run(lambda: HttpTarget(server.url, era), cases)
    finally:
        server.close()


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


@pytest.fixture(scope="module")
def runs(cases: list[Case]) -> Iterator[dict[str, Future[Outcomes]]]:
    http_cases = select(cases, None, list(HTTP_AREAS), [])
    with ThreadPoolExecutor(max_workers=6) as pool:
        yield {
            "in-process": pool.submit(_run, InProcessTarget, cases),
            "stdio-2026": pool.submit(_run, lambda: StdioTarget.reference("2026"), cases),
            "stdio-legacy": pool.submit(_run, lambda: StdioTarget.reference("legacy"), _legacy_selection(cases)),
            "harness": pool.submit(_run, lambda: HarnessTarget(HARNESS), cases),
            "http-2026": pool.submit(_http, "2026", http_cases),
            "http-legacy": pool.submit(_http, "legacy", http_cases),
        }


def _tally(outcomes: Outcomes) -> Counter[str]:
    return Counter(o.outcome for o in outcomes.values())


def _agree(name: str, outcomes: Outcomes, reference: Outcomes, divergences: frozenset[str] = frozenset()) -> None:
    """Every case both could ask has the in-process verdict; the counts follow from that."""
    asked = {k for k, o in outcomes.items() if o.outcome != UNSUPPORTED}
    disagree = {
        k: (outcomes[k].outcome, reference[k].outcome, (outcomes[k].mismatches or [outcomes[k].detail])[:1])
        for k in asked
        if reference[k].outcome != UNSUPPORTED and outcomes[k].outcome != reference[k].outcome
    }
    unexpected = {k: v for k, v in disagree.items() if k not in divergences}
    assert not unexpected, f"{name} disagrees with the in-process reference: {unexpected}"
    stale = sorted(k for k in divergences if k in asked and k not in disagree)
    assert not stale, f"{name} agrees again on {stale}: remove them from the known divergences"
    # The cases only this target can ask (the MCP envelope ones) must pass too.
    only_here = {k: outcomes[k].outcome for k in asked if reference[k].outcome == UNSUPPORTED}
    assert all(v == PASSED for v in only_here.values()), only_here
    tally = _tally(outcomes)
    assert tally[ERRORED] == 0, [k for k, o in outcomes.items() if o.outcome == ERRORED]
    # The passed cases: the in-process ones, minus what this target cannot ask, plus what
    # only it can, minus the known divergences.
    lost = sum(1 for k, o in outcomes.items() if o.outcome == UNSUPPORTED and reference[k].outcome == PASSED)
    reference_passed = sum(1 for k in outcomes if reference[k].outcome == PASSED)
    assert tally[PASSED] == reference_passed - lost + len(only_here) - len(disagree)


def test_in_process_passes_every_case(runs: dict[str, Future[Outcomes]], cases: list[Case]) -> None:
    outcomes = runs["in-process"].result()
    assert len(outcomes) == len(cases)
    bad = {k: (o.outcome, (o.mismatches or [o.detail])[:2]) for k, o in outcomes.items() if o.outcome in (FAILED, ERRORED)}
    assert not bad, f"the reference fails its own fixtures: {bad}"
    # Only the MCP-envelope cases are out of its reach.
    assert {k for k, o in outcomes.items() if o.outcome == UNSUPPORTED} == {c.id for c in cases if c.transport == "mcp"}


@pytest.mark.parametrize("era", ["2026", "legacy"])
def test_stdio_agrees_with_in_process(runs: dict[str, Future[Outcomes]], cases: list[Case], era: str) -> None:
    outcomes, reference = runs[f"stdio-{era}"].result(), runs["in-process"].result()
    assert len(outcomes) == len(cases if era == "2026" else _legacy_selection(cases))
    _agree(f"stdio ({era})", outcomes, reference, MCP_DIVERGENCES)
    # Every MCP-envelope case runs here, and nothing is unsupported for a reason other than
    # two stdio decisions (D-CNF-001, D-CNF-003).
    assert all(o.outcome == PASSED for k, o in outcomes.items() if reference[k].outcome == UNSUPPORTED)
    reasons = {o.detail.split(" (")[0] for o in outcomes.values() if o.outcome == UNSUPPORTED}
    assert reasons <= {
        "inspects the configuration error, which MCP does not carry: the server only refuses to start",
        "needs two connections to one Bridge with these options; over stdio each connection is its own server process",
    }, reasons


def test_harness_agrees_with_in_process(runs: dict[str, Future[Outcomes]]) -> None:
    outcomes, reference = runs["harness"].result(), runs["in-process"].result()
    _agree("harness", outcomes, reference)
    assert {k: o.outcome for k, o in outcomes.items()} == {k: o.outcome for k, o in reference.items()}


@pytest.mark.parametrize("era", ["2026", "legacy"])
def test_http_agrees_with_in_process(runs: dict[str, Future[Outcomes]], era: str) -> None:
    outcomes, reference = runs[f"http-{era}"].result(), runs["in-process"].result()
    _agree(f"http ({era})", outcomes, reference, MCP_DIVERGENCES)
    tally = _tally(outcomes)
    assert tally[PASSED] > len(outcomes) // 2  # most of the slice really ran over HTTP
    details = " ".join(o.detail for o in outcomes.values() if o.outcome == UNSUPPORTED)
    if era == "2026":
        assert "D-MCP-003" in details  # several connections cannot exist in this era
    assert "Bridge options cannot be set" in details


# --------------------------------------------------------------------------- the pieces


def test_command_template_drops_unset_optional_groups() -> None:
    template = CommandTemplate.parse("server --config {config} [--max-jobs {maxJobs}] [--ttl {jobTtlMs}]")
    assert template.render("/c.json", {}) == ["server", "--config", "/c.json"]
    assert template.render("/c.json", {"maxJobs": 3}) == ["server", "--config", "/c.json", "--max-jobs", "3"]
    assert template.unsupported({"maxJobs": 1, "jobTtlMs": 5}) is None
    assert "maxReplayBytes" in (template.unsupported({"maxReplayBytes": 9}) or "")
    # An option without [ ] is always passed, so a run without it cannot be made.
    fixed = CommandTemplate.parse("server {config} --max-jobs {maxJobs}")
    assert fixed.unsupported({}) is not None and fixed.unsupported({"maxJobs": 2}) is None
    # A value that is not a JSON integer reaches the server as JSON text, for it to refuse.
    assert template.render("c", {"maxJobs": True})[-1] == "true"
    with pytest.raises(ValueError, match="placeholder"):
        CommandTemplate.parse("server {config} {nope}")
    with pytest.raises(ValueError, match="unclosed"):
        CommandTemplate.parse("server {config} [--max-jobs {maxJobs}")
    with pytest.raises(ValueError, match="config"):
        StdioTarget("server --max-jobs {maxJobs}")


def test_connections_of_counts_reopened_sessions() -> None:
    steps = [{"op": "prepare"}, {"op": "prepare", "session": "other"}, {"op": "close"}, {"op": "sleep", "ms": 1},
             {"op": "accept"}]  # fmt: skip
    assert mcp_targets.connections_of({"steps": steps}) == 3
    assert mcp_targets.connections_of({"steps": [{"op": "prepare"}, {"op": "accept"}]}) == 1


def test_dumps_wire_writes_lone_surrogates_as_escapes() -> None:
    text = dumps_wire({"a": "x\ud800y", "中": "\U0001f600"})
    assert text == '{"a":"x\\ud800y","中":"\U0001f600"}'
    assert json.loads(text) == {"a": "x\ud800y", "中": "\U0001f600"}


def test_a_json_body_carries_one_content_type_however_the_caller_spells_it() -> None:
    # spec: D-CNF-005 -- the SDK names it "content-type"; a second "Content-Type" went out as
    # "application/json, application/json", which the TypeScript SDK's server refuses (415).
    from intentref.suite.targets.mcp_http import WireHttpClient

    client = WireHttpClient()
    for given in ({"content-type": "application/json"}, {"Content-Type": "application/json"}, {}, None):
        request = client.build_request("POST", "http://127.0.0.1:1/mcp", json={"a": "x\ud800"}, headers=given)
        assert request.headers.get_list("content-type") == ["application/json"]
        assert request.content == b'{"a":"x\\ud800"}'


def test_reply_envelope_is_strict_json_equality() -> None:
    import mcp_types as types

    def result(text: str, structured: Any, is_error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured,
                                    is_error=is_error)  # fmt: skip

    assert mcp_targets.reply_of(result('{"kind":"task","n":1}', {"kind": "task", "n": 1})).envelope == {
        "isError": False, "textIsReply": True}  # fmt: skip
    assert mcp_targets.reply_of(result('{"n": 1.0, "kind": "task"}', {"kind": "task", "n": 1})).envelope["textIsReply"]
    assert not mcp_targets.reply_of(result('{"kind":"task","n":true}', {"kind": "task", "n": 1})).envelope["textIsReply"]
    assert not mcp_targets.reply_of(result("not json", {"kind": "task"})).envelope["textIsReply"]


def test_baseline_formats(tmp_path: Any) -> None:
    (tmp_path / "a.json").write_text('["BRG-0001", "CAN-0002"]')
    (tmp_path / "b.json").write_text('{"expectedFailures": ["BRG-0001"]}')
    (tmp_path / "c.json").write_text('{"BRG-0001": "decided differently"}')
    (tmp_path / "d.txt").write_text("# known\nBRG-0001  # why\n\nCAN-0002\n")
    assert list(baseline.load(tmp_path / "a.json")) == ["BRG-0001", "CAN-0002"]
    assert list(baseline.load(tmp_path / "b.json")) == ["BRG-0001"]
    assert baseline.load(tmp_path / "c.json") == {"BRG-0001": "decided differently"}
    assert baseline.load(tmp_path / "d.txt") == {"BRG-0001": "why", "CAN-0002": ""}
    (tmp_path / "e.txt").write_text("not an id\n")
    with pytest.raises(baseline.BaselineError):
        baseline.load(tmp_path / "e.txt")
    outcomes = [CaseOutcome("BRG-0001", PASSED), CaseOutcome("CAN-0002", FAILED), CaseOutcome("CAN-0003", ERRORED)]
    verdict = baseline.judge(outcomes, {"BRG-0001": "", "CAN-0002": "", "RPY-0001": ""})
    assert (verdict.stale, verdict.expected, verdict.unexpected, verdict.not_run) == (
        ["BRG-0001"], ["CAN-0002"], ["CAN-0003"], ["RPY-0001"])  # fmt: skip
    assert not verdict.ok
    assert baseline.judge([CaseOutcome("CAN-0002", FAILED)], {"CAN-0002": ""}).ok


# --------------------------------------------------------------------------- a server that breaks

# The server that breaks on request: input "crash" exits with status 3, "hang" stops answering.
SCRIPTED_SERVER = pathlib.Path(__file__).with_name("scripted_server.py")


def _prepare_case(case_id: str, text: str) -> dict[str, Any]:
    return {"id": case_id, "description": f"prepare {text}", "requirements": ["R-BRG-006"], "level": "normative",
            "steps": [{"op": "prepare", "args": {"instance": "default", "input": text}, "expect": {"$task": {}}}]}  # fmt: skip


def test_a_crash_or_a_hang_errors_one_case_and_the_next_gets_a_new_server(tmp_path: Any) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    steps = [("BRG-9001", "fine"), ("BRG-9002", "crash"), ("BRG-9003", "fine"), ("BRG-9004", "hang"), ("BRG-9005", "fine")]
    document = {"area": "BRG", "title": "a breaking server", "cases": [_prepare_case(i, t) for i, t in steps]}
    (folder / "brg.json").write_text(json.dumps(document), "utf-8")
    target = StdioTarget(f"{sys.executable} {SCRIPTED_SERVER} {{config}}", era="legacy", timeout=1.5)
    try:
        outcomes = {o.case_id: o for o in execute(load_cases(folder), target)}
    finally:
        target.close()
    assert {k: o.outcome for k, o in outcomes.items()} == {
        "BRG-9001": PASSED, "BRG-9002": ERRORED, "BRG-9003": PASSED, "BRG-9004": ERRORED, "BRG-9005": PASSED}  # fmt: skip
    assert "exit status 3" in outcomes["BRG-9002"].detail
    assert "no answer within the timeout" in outcomes["BRG-9004"].detail


class _CountingTarget(InProcessTarget):
    """The in-process reference, counting the runs it opens with the suite's own instances."""

    def __init__(self) -> None:
        super().__init__()
        self.suite_runs: list[Any] = []

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Any:
        run = super().open(instances, bridge_options)
        if instances == load_instances() and not bridge_options:
            self.suite_runs.append(run)
        return run


def test_isolated_cases_keep_the_verdicts_and_order_of_shared_runs(cases: list[Case]) -> None:
    """D-CNF-050: sharing a run changes neither a verdict nor the order of the report."""
    selection = [c for c in cases if not c.id.startswith("CAP-006")][:300]  # no TTL sleeps
    shared = _CountingTarget()
    together = execute(selection, shared)
    isolated = _CountingTarget()
    apart = execute(selection, isolated, isolate=True)
    assert [o.case_id for o in together] == [c.id for c in selection]
    assert [(o.case_id, o.outcome, o.detail) for o in apart] == [(o.case_id, o.outcome, o.detail) for o in together]
    assert len(shared.suite_runs) == 1  # every case on the suite's instances shared one run
    plain = [c for c in selection if not c.data.get("setup") and not c.data.get("bridge")]
    assert len(isolated.suite_runs) >= len(plain) > 1  # and apart, each had its own


def test_a_case_run_alone_on_a_long_lived_target_needs_no_plan(cases: list[Case]) -> None:
    """The pytest plugin and the matrix's flow timing run cases one by one, unplanned (D-CNF-050)."""
    from intentref.suite.execution.runner import Executor

    chosen = [c for c in cases if c.id in ("BRG-0001", "FLD-0001")]
    chosen.append(next(c for c in cases if c.data.get("setup", {}).get("expect", {"ok": True}) != {"ok": True}))
    target = StdioTarget.reference("legacy")
    executor = Executor(target)
    try:
        outcomes = [executor.run(case) for case in chosen + chosen]
    finally:
        executor.close()
        target.close()
    assert [o.outcome for o in outcomes] == [PASSED] * len(outcomes), [(o.case_id, o.detail) for o in outcomes]
