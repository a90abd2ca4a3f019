"""The Bridge decision variants really take their decision another way (D-CNF-040).

Each test runs the same calls under the reference choices and under one variant of
``intentref.suite.alterations._variants_bridge`` and shows the answers differ as the variant says.
The variants are taken from the catalogue by name, so a test fails if one is renamed away.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intentref.bridge import BridgeClosedError, IntentBridge, create_intent_bridge
from intentref.intent import Intent
from intentref.suite.alterations.alteration import AlteredTarget
from intentref.suite.alterations.variants import target
from intentref.suite.targets.base import ConfigRejected, load_instances

INPUT = "查询订单 000123"
CORE = json.dumps({"normalizedInput": "查询订单 000123。", "primaryIntent": "查询订单 000123", "requirements": [],
                   "prohibitions": [], "intents": [{"action": "query", "target": "订单 000123", "requirements": [],
                   "blockers": {"clarificationReason": None, "questions": [], "confirmationReason": None,
                                "conditionReason": None}}]}, ensure_ascii=False)  # fmt: skip
DATA = json.dumps({"data": {"orderId": "000123"},
                   "evidence": [{"path": "/data/orderId", "mode": "exact",
                                 "sources": [{"sourceId": "input", "quote": "000123"}]}],
                   "descriptionChecks": [{"path": "/data/orderId", "verdict": "satisfied", "explanation": "给出编号。",
                                          "sources": [{"sourceId": "input", "quote": "000123"}]}],
                   "fieldResults": [{"path": "/data/orderId", "status": "extracted", "explanation": "给出编号。"}],
                   "issues": []}, ensure_ascii=False)  # fmt: skip
OVERSIZED = CORE + " " * (1024 * 1024 + 1)  # D-LIM-003: one byte past 1 MiB with the candidate
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


REFERENCE = AlteredTarget([], name="reference")


def _bridge(variant: AlteredTarget, options: dict[str, Any] | None = None, **clocks: Callable[[], float]) -> IntentBridge:
    """A Bridge built with the variant's policy and store (the reference's for ``REFERENCE``)."""
    configs = load_instances()
    instances = {name: Intent(configs[name], policy=variant.policy) for name in ("order", "default")}
    return create_intent_bridge({"instances": instances, **(options or {})}, policy=variant.policy,
                                store=variant.store, **clocks)


def _both(name: str, scenario: Callable[[AlteredTarget], Any]) -> tuple[Any, Any]:
    """The scenario's answer on a reference Bridge, then on one built as the variant ``name``."""
    return scenario(REFERENCE), scenario(target(name))


def _code(reply: dict[str, Any]) -> str | None:
    return reply["error"]["code"] if reply.get("kind") == "error" else None


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


# --------------------------------------------------------------------------- boundary variants


def _session(name: str | None, options: dict[str, Any] | None = None) -> Any:
    """A session of the in-process reference (``name`` None) or of the variant target."""
    chosen_target = AlteredTarget([], name="reference") if name is None else target(name)
    configs = load_instances()
    return chosen_target.open({n: configs[n] for n in ("order", "default")}, options or {}).connect()


def test_absent_input_is_blank() -> None:
    # spec: D-BRG-002 -- the reference names /input; the variant gives the seed's blank-input error.
    reference = _session(None).prepare({"instance": "order"}).value
    variant = _session("absent-input-is-blank").prepare({"instance": "order"}).value
    assert _code(reference) == _code(variant) == "INPUT_INVALID"
    assert any(issue["path"] == "/input" for issue in reference["error"]["issues"])
    assert variant["error"]["issues"] == []
    assert variant["error"]["message"] == "input must contain non-whitespace text."


def test_uuid_tokens_round_trip_and_replay() -> None:
    # spec: D-BRG-006 -- 22 URL-safe characters in the reference, UUIDs under the variant.
    reference = _session(None).prepare({"instance": "order", "input": INPUT}).value
    assert len(reference["jobId"]) == len(reference["stepToken"]) == 22
    session = _session("uuid-tokens")
    task = session.prepare({"instance": "order", "input": INPUT}).value
    assert UUID.match(task["jobId"]) and UUID.match(task["stepToken"])
    submission = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE}
    data_task = session.accept(submission).value
    assert data_task["kind"] == "task" and data_task["stage"] == "data"
    assert data_task["jobId"] == task["jobId"] and UUID.match(data_task["stepToken"])
    assert data_task["stepToken"] != task["stepToken"]
    assert session.accept(submission).value == data_task  # a replay is the same reply again
    invented = {"jobId": task["jobId"], "stepToken": "not-a-token", "candidateText": CORE}
    assert _code(session.accept(invented).value) == "BRIDGE_STEP_CONFLICT"


def test_capacity_refusal_at_input() -> None:
    # spec: D-BRG-012 -- the stage of a capacity refusal.
    def second(name: str | None) -> dict[str, Any]:
        session = _session(name, {"maxJobs": 1})
        session.prepare({"instance": "order", "input": INPUT})
        return session.prepare({"instance": "order", "input": INPUT}).value

    reference, variant = second(None), second("capacity-refusal-at-input")
    assert (_code(reference), reference["error"]["stage"]) == ("LIMIT_EXCEEDED", "bridge")
    assert (_code(variant), variant["error"]["stage"]) == ("LIMIT_EXCEEDED", "input")


# --------------------------------------------------------------------------- configuration


def test_integral_float_options() -> None:
    # spec: D-BRG-014 -- maxJobs 3.0 is refused by the reference and is 3 under the variant.
    with pytest.raises(ConfigRejected) as refused:
        _session(None, {"maxJobs": 3.0})
    assert refused.value.error["code"] == "CONFIG_INVALID"
    session = _session("integral-float-options", {"maxJobs": 3.0})
    replies = [session.prepare({"instance": "order", "input": INPUT}).value for _ in range(4)]
    assert [r["kind"] for r in replies] == ["task", "task", "task", "error"]
    assert _code(replies[3]) == "LIMIT_EXCEEDED"


def test_config_faults_all_listed() -> None:
    # spec: D-BRG-014 -- the first faulty option, or every one of them.
    def paths(name: str | None, options: dict[str, Any]) -> list[str]:
        with pytest.raises(ConfigRejected) as refused:
            _session(name, options)
        assert refused.value.error["code"] == "CONFIG_INVALID"
        return [issue["path"] for issue in refused.value.error["issues"]]

    two = {"maxReplayBytes": 0, "jobTtlMs": -5}
    assert paths(None, two) == ["/maxReplayBytes"]
    assert paths("config-faults-all-listed", two) == ["/maxReplayBytes", "/jobTtlMs"]
    assert paths("config-faults-all-listed", {"maxJobs": 0}) == paths(None, {"maxJobs": 0}) == ["/maxJobs"]


def test_smaller_capacity_defaults() -> None:
    # spec: D-LIM-001 -- the options a config leaves out.
    reference, variant = _both("smaller-capacity-defaults", lambda variant: _bridge(variant).options)
    assert (reference.max_jobs, reference.max_replay_entries, reference.max_replay_bytes) == (
        1024,
        4096,
        64 << 20,
    )
    assert (variant.max_jobs, variant.max_replay_entries, variant.max_replay_bytes) == (64, 256, 8 << 20)

    def jobs_admitted(variant: AlteredTarget) -> int:
        session = _bridge(variant).connect()
        return sum(
            session.prepare({"instance": "order", "input": INPUT})["kind"] == "task" for _ in range(65)
        )

    assert _both("smaller-capacity-defaults", jobs_admitted) == (65, 64)


# --------------------------------------------------------------------------- sessions


def test_closed_sessions_keep_records() -> None:
    # spec: D-BRG-004, D-BRG-005 -- after close: dropped (reference) or ended and kept (variant).
    def scenario(variant: AlteredTarget) -> tuple[Any, ...]:
        bridge = _bridge(variant)
        session = bridge.connect()
        active = session.prepare({"instance": "order", "input": INPUT})
        done = session.prepare({"instance": "default", "input": INPUT})
        result = session.accept(
            {"jobId": done["jobId"], "stepToken": done["stepToken"], "candidateText": CORE}
        )
        assert result["kind"] == "result"
        session.close()
        with pytest.raises(BridgeClosedError):
            session.prepare({"instance": "order", "input": INPUT})
        return (bridge.stats(), session.cancel({"jobId": done["jobId"]}), session.cancel({"jobId": active["jobId"]}),
                session.accept({"jobId": active["jobId"], "stepToken": active["stepToken"], "candidateText": CORE}),
                result)  # fmt: skip

    reference, variant = _both("closed-sessions-keep-records", scenario)
    assert reference[0] == {"activeJobs": 0, "records": 0, "replayBytes": 0}
    assert [_code(r) for r in reference[1:4]] == ["BRIDGE_JOB_NOT_FOUND"] * 3
    assert variant[0]["activeJobs"] == 0 and variant[0]["records"] == 2
    assert variant[1] == variant[4]  # the finished job's result is still answered
    assert _code(variant[2]) == "MODEL_ABORTED"  # the active job ended as a cancel ends it
    assert variant[3] == variant[2]  # its open step answers how it ended (D-BRG-008)


def test_closed_calls_unchecked() -> None:
    # spec: D-BRG-004 -- a malformed call on a closed session.
    def scenario(variant: AlteredTarget) -> tuple[Any, Any]:
        session = _bridge(variant).connect()
        session.close()
        return session.accept({"jobId": 7}), session.cancel({"jobId": "x", "outcome": "later"})

    reference, variant = _both("closed-calls-unchecked", scenario)
    assert [(_code(r), r["error"]["issues"][0]["path"]) for r in reference] == [
        ("INPUT_INVALID", "/jobId"),
        ("INPUT_INVALID", "/outcome"),
    ]
    assert [_code(r) for r in variant] == ["BRIDGE_JOB_NOT_FOUND"] * 2


# --------------------------------------------------------------------------- submissions


def test_rejections_replayed() -> None:
    # spec: D-BRG-009 -- a refused text on a token that has since been used.
    def scenario(variant: AlteredTarget) -> tuple[Any, Any, Any]:
        session = _bridge(variant).connect()
        task = session.prepare({"instance": "order", "input": INPUT})
        ids = {"jobId": task["jobId"], "stepToken": task["stepToken"]}
        refused = session.accept({**ids, "candidateText": OVERSIZED})
        assert _code(refused) == "LIMIT_EXCEEDED"
        assert session.accept({**ids, "candidateText": CORE})["stage"] == "data"  # the token stayed usable
        return (
            refused,
            session.accept({**ids, "candidateText": OVERSIZED}),
            session.accept({**ids, "candidateText": CORE}),
        )

    reference, variant = _both("rejections-replayed", scenario)
    assert _code(reference[1]) == "BRIDGE_STEP_CONFLICT"
    assert variant[1] == variant[0]  # the refusal is replayed
    assert reference[2]["stage"] == variant[2]["stage"] == "data"  # the used step still replays


def test_step_budget_estimated() -> None:
    # spec: D-BRG-010 -- a budget the exact record after the step fills to the byte.
    probe = _bridge(REFERENCE)
    probe_session = probe.connect()
    task = probe_session.prepare({"instance": "order", "input": INPUT})
    probe_session.accept({"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE})
    exact = probe.stats()["replayBytes"]

    def scenario(variant: AlteredTarget) -> tuple[Any, int]:
        bridge = _bridge(variant, {"maxReplayBytes": exact})
        session = bridge.connect()
        task = session.prepare({"instance": "order", "input": INPUT})
        reply = session.accept(
            {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE}
        )
        return reply, bridge.stats()["replayBytes"]

    reference, variant = _both("step-budget-estimated", scenario)
    assert reference[0]["kind"] == "task" and reference[1] == exact
    assert _code(variant[0]) == "LIMIT_EXCEEDED"
    assert variant[0]["error"]["issues"][0]["path"] == "/candidateText"
    assert variant[1] < exact  # nothing of the refused step was kept


# --------------------------------------------------------------------------- capacity


def test_record_overhead_counted() -> None:
    # spec: D-BRG-011 -- 512 bytes more per record, active and terminal.
    def scenario(variant: AlteredTarget) -> list[int]:
        bridge = _bridge(variant)
        session = bridge.connect()
        sizes = []
        for _ in range(2):
            task = session.prepare({"instance": "default", "input": INPUT})
            sizes.append(bridge.stats()["replayBytes"])
        session.cancel({"jobId": task["jobId"]})
        sizes.append(bridge.stats()["replayBytes"])
        return sizes

    reference, variant = _both("record-overhead-counted", scenario)
    assert [v - r for r, v in zip(reference, variant, strict=True)] == [512, 1024, 1024]


def test_capacity_before_request() -> None:
    # spec: D-BRG-012 -- a bad request on a full Bridge.
    def scenario(variant: AlteredTarget) -> Any:
        session = _bridge(variant, {"maxJobs": 1}).connect()
        session.prepare({"instance": "order", "input": INPUT})
        return session.prepare({"instance": "order", "input": "   "})

    reference, variant = _both("capacity-before-request", scenario)
    assert _code(reference) == "INPUT_INVALID"
    assert _code(variant) == "LIMIT_EXCEEDED"


def test_reclaim_oldest_created() -> None:
    # spec: D-BRG-013 -- created first, terminated last: which record goes.
    def scenario(variant: AlteredTarget) -> tuple[str | None, str | None]:
        session = _bridge(variant, {"maxReplayEntries": 2}).connect()
        first = session.prepare({"instance": "order", "input": INPUT})
        second = session.prepare({"instance": "order", "input": INPUT})
        session.cancel({"jobId": second["jobId"]})
        session.cancel({"jobId": first["jobId"]})
        session.prepare({"instance": "order", "input": INPUT})  # three records > 2: one goes
        return _code(session.cancel({"jobId": first["jobId"]})), _code(
            session.cancel({"jobId": second["jobId"]})
        )

    reference, variant = _both("reclaim-oldest-created", scenario)
    assert reference == ("MODEL_ABORTED", "BRIDGE_JOB_NOT_FOUND")
    assert variant == ("BRIDGE_JOB_NOT_FOUND", "MODEL_ABORTED")


# --------------------------------------------------------------------------- the legacy TTLs


def test_job_ttl_per_task() -> None:
    # spec: D-BRG-016 -- one deadline per job, or one per task.
    def scenario(variant: AlteredTarget) -> tuple[Any, Any, Any]:
        clock = _Clock()
        session = _bridge(variant, {"jobTtlMs": 1000}, clock=clock, wall_clock=clock).connect()
        task = session.prepare({"instance": "order", "input": INPUT})
        clock.now += 600
        data_task = session.accept(
            {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": CORE}
        )
        clock.now += 600  # 1,200 ms after prepare, 600 ms after the data task
        last = session.accept(
            {"jobId": task["jobId"], "stepToken": data_task["stepToken"], "candidateText": DATA}
        )
        return task, data_task, last

    reference, variant = _both("job-ttl-per-task", scenario)
    assert reference[1]["expiresAt"] == reference[0]["expiresAt"]
    assert _code(reference[2]) == "BRIDGE_JOB_EXPIRED"
    assert variant[1]["expiresAt"] > variant[0]["expiresAt"]
    assert variant[2]["kind"] == "result"


def test_job_ttl_drops_record() -> None:
    # spec: D-BRG-016 -- at the deadline: an expired terminal record and a kept result, or both gone.
    def scenario(variant: AlteredTarget) -> tuple[Any, dict[str, int], Any, Any]:
        clock = _Clock()
        bridge = _bridge(variant, {"jobTtlMs": 1000}, clock=clock, wall_clock=clock)
        session = bridge.connect()
        task = session.prepare({"instance": "order", "input": INPUT})
        done = session.prepare({"instance": "default", "input": INPUT})
        result = session.accept(
            {"jobId": done["jobId"], "stepToken": done["stepToken"], "candidateText": CORE}
        )
        clock.now += 999
        before = session.cancel({"jobId": done["jobId"]})
        clock.now += 1
        return (
            session.cancel({"jobId": task["jobId"]}),
            bridge.stats(),
            session.cancel({"jobId": done["jobId"]}),
            (result == before),
        )

    reference, variant = _both("job-ttl-drops-record", scenario)
    assert reference[3] is variant[3] is True  # before the deadline both keep the result
    assert _code(reference[0]) == "BRIDGE_JOB_EXPIRED" and reference[1]["records"] == 2
    assert reference[2]["kind"] == "result"
    assert _code(variant[2]) == "BRIDGE_JOB_NOT_FOUND"
    assert _code(variant[0]) == "BRIDGE_JOB_NOT_FOUND" and variant[1] == {"activeJobs": 0, "records": 0,
                                                                          "replayBytes": 0}  # fmt: skip


def test_replay_ttl_tombstone() -> None:
    # spec: D-BRG-016 -- a record the replay TTL dropped: not found, or expired (to its owner only).
    def scenario(variant: AlteredTarget) -> tuple[Any, Any, Any]:
        clock = _Clock()
        bridge = _bridge(variant, {"replayTtlMs": 1000}, clock=clock, wall_clock=clock)
        session = bridge.connect()
        done = session.prepare({"instance": "default", "input": INPUT})
        ids = {"jobId": done["jobId"], "stepToken": done["stepToken"]}
        result = session.accept({**ids, "candidateText": CORE})
        clock.now += 1000
        return (
            result,
            session.cancel({"jobId": done["jobId"]}),
            bridge.connect().cancel({"jobId": done["jobId"]}),
        )

    reference, variant = _both("replay-ttl-tombstone", scenario)
    assert reference[0]["kind"] == variant[0]["kind"] == "result"
    assert _code(reference[1]) == "BRIDGE_JOB_NOT_FOUND"
    assert _code(variant[1]) == "BRIDGE_JOB_EXPIRED" and variant[1]["error"]["stage"] == "bridge"
    assert (
        _code(reference[2]) == _code(variant[2]) == "BRIDGE_JOB_NOT_FOUND"
    )  # another session learns nothing


def test_every_bridge_variant_is_tested_here() -> None:
    from intentref.suite.alterations import _variants_bridge

    source = Path(__file__).read_text("utf-8")
    untested = [v.name for v in _variants_bridge.VARIANTS if f'"{v.name}"' not in source]
    assert untested == []
