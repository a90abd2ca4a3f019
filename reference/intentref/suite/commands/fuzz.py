"""``intentref fuzz``: reproducible JSON cases for host developers, and replaying them against a target.

    intentref fuzz --seed N --count K --out DIR [--kind candidates|replies|sessions] [--heavy]
    intentref fuzz --replay DIR [--in-process | --stdio CMD | --http URL | --harness CMD | --target SPEC ...]
                   [--era auto|2026|legacy] [--loose] [--jobs N]

A replay takes the target flags of every command (``targets.options``; without one, the
bundled server over stdio, D-CNF-057).

Three kinds of case, one JSON file each, plus ``manifest.json`` (counts per kind, per
fault and per defect).  The same seed gives byte-identical files: every choice comes from
``random.Random`` seeded per case (``"{seed}/{kind}/{index}"``, so case 7 is the same
whatever ``--count`` is), the instance catalog is fixed, and tokens appear only as
placeholders (``<jobId:1>``) or fixture references (``{"$reply": 0, "pointer": "/jobId"}``).

* ``candidates/`` -- a task as a host receives it, a candidate text (valid, or broken in
  the named way ``fault``), what the reference makes of it (``expected``: kind, code,
  stage) and its whole reply; ``steps`` replays it as a conformance case.
* ``replies/`` -- BridgeReplies and MCP tool results, valid (real reference replies) or
  malformed in the named way ``defect``, for hosts to test their decoders.
* ``sessions/`` -- a short script of calls over one or two sessions, as conformance steps
  with the reference's replies as exact expectations.

Texts too large or not well-formed for a plain JSON string (10 MB, lone surrogates) are
written with the fixture generators ``$repeat``, ``$concat`` and ``$utf16``
(conformance/README.md).  The session walker here also drives ``intentref properties``'s
long campaign.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import random
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from intentref.suite.targets.base import CallSession, Reply, Run, Session
from intentref.suite.targets.options import add_target_arguments, target_from
from intentref.suite.targets.registry import LARGE_CALL_TIMEOUT, TargetSpec
from intentref.suite.usage import UsageError, worker_count

FORMAT: Final = "intentref-fuzz/1"
KINDS: Final = ("candidates", "replies", "sessions")
PREFIX: Final = {"candidates": "c", "replies": "r", "sessions": "s"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("fuzz", help="write reproducible fuzz cases for host developers, or replay them against a target")
    p.add_argument("--seed", type=int, default=0, help="the seed (default 0): the same seed writes the same bytes")
    p.add_argument("--count", type=int, default=100, metavar="K", help="cases of each kind (default 100)")
    p.add_argument("--out", metavar="DIR", help="the folder to write (created; existing case files are replaced)")
    p.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeatable; default all)")
    p.add_argument("--heavy", action="store_true", help="also 10 MB texts (large files)")
    p.add_argument("--replay", metavar="DIR", help="replay the candidate and session cases of DIR against a target")
    p.add_argument("--loose", action="store_true", help="with --replay: compare kind, code and stage only")
    p.add_argument("--jobs", type=worker_count, default=None, metavar="N",
                   help="with --replay: worker processes, each with a target of its own "
                   "(default: the CPUs this process may use)")  # fmt: skip
    add_target_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.replay:
        try:
            spec = target_from(args, LARGE_CALL_TIMEOUT)
        except UsageError as exc:
            print(f"intentref fuzz: {exc}", file=sys.stderr)
            return 2
        return replay(Path(args.replay), spec, loose=args.loose, jobs=args.jobs)
    if not args.out:
        print("intentref fuzz: --out DIR (to write cases) or --replay DIR (to replay them) is required", file=sys.stderr)
        return 2
    manifest = write_cases(Path(args.out), args.seed, args.count, tuple(args.kind or KINDS), heavy=args.heavy)
    print(f"wrote {sum(manifest['kinds'].values())} cases to {args.out} (seed {args.seed})")
    return 0


# --------------------------------------------------------------------------- writing files

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def dumps_file(value: Any) -> str:
    """Readable, deterministic JSON; a lone surrogate left in a string is written as its \\u escape."""
    text = json.dumps(value, ensure_ascii=False, indent=1)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _rng(seed: int, kind: str, index: int) -> random.Random:
    # A string seed is hashed with SHA-512 by random.seed: stable across runs and platforms.
    return random.Random(f"{seed}/{kind}/{index}")


def write_cases(out: Path, seed: int, count: int, kinds: tuple[str, ...], heavy: bool = False) -> dict[str, Any]:
    makers: dict[str, Callable[[random.Random, str, bool], dict[str, Any]]] = {
        "candidates": candidate_case, "replies": reply_case, "sessions": session_case,
    }  # fmt: skip
    manifest: dict[str, Any] = {"format": FORMAT, "seed": seed, "count": count, "heavy": heavy,
                                "kinds": {}, "faults": {}, "defects": {}, "expected": {}}  # fmt: skip
    faults: Counter[str] = Counter()
    defects: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    for kind in kinds:
        folder = out / kind
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.json"):
            stale.unlink()
        for index in range(count):
            case_id = f"{PREFIX[kind]}{index:04d}"
            case = makers[kind](_rng(seed, kind, index), case_id, heavy)
            (folder / f"{case_id}.json").write_text(dumps_file(case), "utf-8")
            if kind == "candidates":
                faults[case["fault"] or "valid"] += 1
                verdict = case["expected"]
                expected[verdict.get("code") or verdict["kind"]] += 1
            elif kind == "replies":
                defects[case["defect"] or f"valid.{case['layer']}"] += 1
        manifest["kinds"][kind] = count
    manifest["faults"], manifest["defects"] = dict(sorted(faults.items())), dict(sorted(defects.items()))
    manifest["expected"] = dict(sorted(expected.items()))
    (out / "manifest.json").write_text(dumps_file(manifest), "utf-8")
    return manifest


# --------------------------------------------------------------------------- candidate cases


def _placeholders(reply: Any, tokens: dict[str, str]) -> Any:
    """``reply`` with its tokens as ``<jobId:1>``-style placeholders, numbered as first seen."""
    if not isinstance(reply, dict):
        return reply
    out = dict(reply)
    for member in ("jobId", "stepToken"):
        if isinstance(out.get(member), str):
            if out[member] not in tokens:
                tokens[out[member]] = f"<{member}:{sum(1 for v in tokens.values() if v.startswith('<' + member)) + 1}>"
            out[member] = tokens[out[member]]
    return out


def _verdict(reply: dict[str, Any]) -> dict[str, Any]:
    if reply["kind"] == "error":
        return {"kind": "error", "code": reply["error"]["code"], "stage": reply["error"]["stage"]}
    if reply["kind"] == "task":
        return {"kind": "task", "stage": reply["stage"], "repair": "repair" in json.loads(reply["payload"])}
    return {"kind": "result"}


def candidate_case(rng: random.Random, case_id: str, heavy: bool) -> dict[str, Any]:
    from intentref.core.jsontext import dumps_compact
    from intentref.suite.generators.candidates import core_candidate, data_candidate
    from intentref.suite.generators.catalog import catalog_instances
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.generators.faults import CANDIDATE_FAULTS, Subject, faults_for
    from intentref.suite.generators.reference_replies import catalog_schema, reference_session
    from intentref.suite.generators.requests import plan_request
    from intentref.suite.properties.case_writer import Call, case_from_calls, text_spec
    from intentref.suite.properties.differential import well_formed_json

    d = RandomDraw(rng)
    instances = catalog_instances()
    name = d.choice([*sorted(n for n in instances if catalog_schema(n)), "default"])
    plan = plan_request(d, name, catalog_schema(name))
    session = reference_session()
    calls: list[Call] = []

    def call(op: str, args: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = getattr(session, op)(args)
        calls.append(Call("main", op, args, well_formed_json(reply)))  # as any transport delivers it
        return reply

    try:
        task = call("prepare", plan.request)
        core = core_candidate(d)
        if plan.selected and d.integer(0, 2) > 0:  # two in three reach the data stage
            task = call("accept", _step(task, dumps_compact(core)))
        repairs = int(instances[name].get("repairAttempts", 1))
        if repairs and d.integer(0, 4) == 0:  # some tasks are repair tasks
            task = call("accept", _step(task, "{"))
        payload = json.loads(task["payload"])
        if task["stage"] == "core":
            subject = Subject("core", core, payload)
        else:
            subject = Subject("data", data_candidate(d, payload, plan.data), payload)
        fault = None
        text = subject.text
        if d.integer(0, 9) >= 3:
            fault = d.choice(faults_for(subject, include_heavy=heavy))
            text = CANDIDATE_FAULTS[fault](subject, d).text
        reply = call("accept", _step(task, text))
    finally:
        session.close()
    tokens: dict[str, str] = {}
    for earlier in calls[:-1]:
        _placeholders(earlier.reply, tokens)
    return {
        "kind": "candidate",
        "id": case_id,
        "fault": fault,
        "instance": name,
        "instances": {name: instances[name]},
        "task": _placeholders(well_formed_json(task), tokens),
        "candidateText": text_spec(text),
        "expected": _verdict(reply),
        "reply": _placeholders(well_formed_json(reply), tokens),
        "steps": case_from_calls(calls, instances, {}, ("R-BRG-006",))["steps"],
    }


def _step(task: dict[str, Any], text: str) -> dict[str, Any]:
    return {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": text}


# --------------------------------------------------------------------------- reply cases


def reply_case(rng: random.Random, case_id: str, heavy: bool) -> dict[str, Any]:
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.generators.reference_replies import reference_reply
    from intentref.suite.generators.replies import malformed_reply, malformed_tool_result, tool_result

    d = RandomDraw(rng)
    reply = reference_reply(d)
    layer = d.choice(["bridge", "mcp"])
    case: dict[str, Any] = {"kind": "reply", "id": case_id, "layer": layer, "valid": True, "defect": None,
                            "requirement": None}  # fmt: skip
    if d.integer(0, 9) < 4:
        case["value"] = reply if layer == "bridge" else tool_result(reply)
        return case
    defect, requirement, value = (malformed_reply if layer == "bridge" else malformed_tool_result)(d, reply)
    return {**case, "valid": False, "defect": defect, "requirement": requirement, "value": value}


# --------------------------------------------------------------------------- session cases


def session_case(rng: random.Random, case_id: str, heavy: bool) -> dict[str, Any]:
    from intentref.suite.generators.catalog import catalog_instances
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.generators.reference_replies import reference_session
    from intentref.suite.properties.case_writer import case_from_calls
    from intentref.suite.properties.differential import well_formed_json
    from intentref.suite.properties.targets import Tally

    d = RandomDraw(rng)
    # Objects only: a session case must replay over MCP too, whose tool arguments are objects.
    walker = Walker(_ReferenceRun(reference_session), d, Tally(), heavy=heavy, objects_only=True)
    try:
        for _ in range(d.integer(3, 10)):
            walker.step()
    finally:
        walker.close()
    calls = [replace(c, reply=well_formed_json(c.reply)) for c in walker.calls]  # as any transport delivers them
    case = case_from_calls(calls, catalog_instances(), {}, ("R-BRG-006", "R-IDM-001"))
    return {"kind": "session", "id": case_id, "instances": case.get("setup", {}).get("instances", {}),
            "instanceNames": case["instances"], "steps": case["steps"]}  # fmt: skip


class _ReferenceRun:
    """The shared reference Bridge as a conformance Run of plain reply dicts."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect

    def connect(self) -> Any:
        from intentref.suite.targets.base import InProcessSession

        return InProcessSession(self._connect())

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- the session walker

CANCEL_CODES: Final = {"cancelled": "MODEL_ABORTED", "refusal": "MODEL_REFUSED", "incomplete": "MODEL_OUTPUT_INCOMPLETE"}
KEEPS_JOB: Final = ("LIMIT_EXCEEDED", "INPUT_INVALID", "BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND")
WALK_INSTANCES: Final = ("order", "default", "tworepairs", "norepair", "multi", "escaped", "english", "period",
                         "gen-00", "gen-01", "gen-02", "gen-03", "gen-04", "gen-05")  # fmt: skip
# Action -> weight.  Common host behaviour first; the rest probes the edges.
ACTIONS: Final = {"prepare": 16, "prepare_malformed": 5, "accept": 22, "accept_fault": 16, "accept_malformed": 4,
                  "replay": 8, "conflict": 4, "foreign": 3, "stale": 2, "cancel": 5, "cancel_terminal": 3,
                  "cancel_malformed": 3, "connect": 2, "close": 1}  # fmt: skip
# Used steps with texts longer than this are not kept for replay (memory over long runs).
MAX_KEPT_TEXT: Final = 300_000


@dataclass
class JobModel:
    id: str
    owner: int
    instance: str
    plan: Any
    stage: str | None  # None once terminal
    token: str
    payload: str
    repairs: dict[str, int] = field(default_factory=lambda: {"core": 0, "data": 0})
    used: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # token, text, canonical, wire
    terminal: str | None = None  # canonical terminal reply


class Walker:
    """A random walk of Bridge calls over a few sessions, with a model of what must come back.

    Every call is counted in ``tally``; a failed invariant (a lost active job, a replay
    drift, a wrong prediction) is counted and noted, not raised, so a long run reports
    everything it found.  ``calls`` is the reference-space log for ``case_from_calls``.
    """

    def __init__(self, run: Any, draw: Any, tally: Any, heavy: bool = False, max_sessions: int = 3,
                 objects_only: bool = False, instances: dict[str, Any] | None = None) -> None:  # fmt: skip
        from intentref.suite.generators.catalog import catalog_instances

        self.run, self.d, self.tally, self.heavy = run, draw, tally, heavy
        self.objects_only = objects_only  # MCP tool arguments are always objects
        self.max_sessions = max_sessions
        self.catalog = catalog_instances() if instances is None else instances  # what the run serves
        self.instances = [name for name in WALK_INSTANCES if name in self.catalog]
        self.sessions: list[Any] = []
        self.names: list[str] = []
        self.jobs: list[JobModel] = []
        self.calls: list[Any] = []
        self._last_wire: str | None = None
        self._new_session()

    # --- plumbing --------------------------------------------------------------------------

    def _new_session(self) -> None:
        self.sessions.append(self.run.connect())
        self.names.append("main" if len(self.names) == 0 else f"s{len(self.names) + 1}")

    def _open(self) -> list[int]:
        return [i for i, s in enumerate(self.sessions) if s is not None]

    def _jobs(self, active: bool | None = None) -> list[JobModel]:
        return [j for j in self.jobs if self.sessions[j.owner] is not None
                and (active is None or (j.stage is not None) == active)]  # fmt: skip

    def _call(self, index: int, op: str, request: Any) -> dict[str, Any] | None:
        from intentref.core.limits import has_lone_surrogate
        from intentref.mcp.replies import is_bridge_reply
        from intentref.suite.properties.case_writer import Call
        from intentref.suite.properties.differential import Divergence
        from intentref.suite.properties.targets import call_allowing_refusal
        from intentref.suite.targets.base import RequestDropped

        self.tally.calls[op] += 1
        try:
            reply = call_allowing_refusal(self.sessions[index], op, request)
        except Divergence as exc:
            self.tally.divergences += 1
            if self.tally.room():  # building the case costs: only for the notes kept
                self.tally.note("divergence:\n" + str(exc))
            self._drop(index)
            return None
        except Exception as exc:  # the target broke: count it, carry on with a new connection
            if has_lone_surrogate(request):
                # Whether a lone surrogate reaches the server at all is its transport's matter,
                # decided by the reference (D-REQ-003, D-MCP-008; D-CNF-053): reference level.
                # A dropped request leaves a live connection, which goes on serving.
                self.tally.lone_surrogates_lost += 1
                if self.tally.lone_surrogates_lost == 1:
                    self.tally.note(f"{op} with a lone surrogate raised {type(exc).__name__}: {exc!s:.300}")
                if not isinstance(exc, RequestDropped):
                    self._drop(index)
                return None
            self.tally.uncaught_exceptions += 1
            self.tally.note(f"{op} raised {type(exc).__name__}: {exc!s:.300}")
            self._drop(index)
            return None
        value = reply.value
        self.calls.append(Call(self.names[index], op, request, value))
        if not is_bridge_reply(value):
            self.tally.non_replies += 1
            self.tally.note(f"{op} returned a non-reply: {value!r:.300}")
            return None
        self._last_wire = reply.text
        result: dict[str, Any] = value
        return result

    def _drop(self, index: int) -> None:
        session, self.sessions[index] = self.sessions[index], None
        with contextlib.suppress(Exception):  # a broken connection may not close cleanly
            session.close()
        if not self._open():
            self._new_session()

    def _fail(self, counter: str, text: str) -> None:
        setattr(self.tally, counter, getattr(self.tally, counter) + 1)
        self.tally.note(f"{counter}: {text:.400}")

    def close(self, release: bool = False) -> None:
        """End the walk: close every open session, or with ``release`` hand each back to the run.

        A released session has its active jobs cancelled and may serve the next walk on the
        same run (D-CNF-002, D-CNF-024): over stdio that saves a server process per session.
        """
        from intentref.suite.properties.case_writer import Call

        for index in self._open():
            self.calls.append(Call(self.names[index], "close"))
            try:
                session = self.sessions[index]
                session.release() if release else session.close()
            except Exception as exc:
                self.tally.uncaught_exceptions += 1
                self.tally.note(f"close raised {type(exc).__name__}: {exc}")
            self.sessions[index] = None

    # --- the walk --------------------------------------------------------------------------

    def step(self) -> None:
        names = list(ACTIONS)
        roll = self.d.integer(0, sum(ACTIONS.values()) - 1)
        for name in names:
            roll -= ACTIONS[name]
            if roll < 0:
                break
        getattr(self, "_" + name)()

    def _session_index(self) -> int:
        return int(self.d.choice(self._open()))

    def _prepare(self) -> None:
        from intentref.suite.generators.reference_replies import catalog_schema
        from intentref.suite.generators.requests import plan_request

        index = self._session_index()
        name = self.d.choice(self.instances)
        plan = plan_request(self.d, name, catalog_schema(name), allow_empty_selection=True)
        reply = self._call(index, "prepare", plan.request)
        if reply is None:
            return
        if reply["kind"] != "task" or reply.get("stage") != "core":
            self._fail("mispredictions", f"a valid prepare was answered {reply}")
            return
        self.jobs.append(JobModel(reply["jobId"], index, name, plan, "core", reply["stepToken"], reply["payload"]))

    def _prepare_malformed(self) -> None:
        from intentref.suite.generators.requests import malformed_request

        defect, request = malformed_request(self.d, "prepare", instance=self.d.choice(self.instances), heavy=self.heavy,
                                            objects_only=self.objects_only)
        self.tally.sent[defect] += 1
        reply = self._call(self._session_index(), "prepare", request)
        if reply is not None and reply["kind"] != "error":
            self._fail("mispredictions", f"{defect} was answered {reply['kind']}")

    def _active_job(self) -> JobModel | None:
        active = self._jobs(active=True)
        return self.d.choice(active) if active else None

    def _accept(self, broken: bool = False) -> None:
        from intentref.suite.generators.candidates import core_candidate, data_candidate
        from intentref.suite.generators.faults import CANDIDATE_FAULTS, Subject, faults_for

        job = self._active_job()
        if job is None:
            return self._prepare()
        payload = json.loads(job.payload)
        stage = job.stage
        assert stage is not None
        if stage == "core":
            subject = Subject("core", core_candidate(self.d), payload)
        else:
            subject = Subject("data", data_candidate(self.d, payload, job.plan.data), payload)
        text, expected = subject.text, "valid"
        if broken:
            fault = self.d.choice(faults_for(subject, include_heavy=self.heavy))
            made = CANDIDATE_FAULTS[fault](subject, self.d)
            text, expected = made.text, made.expected_code
            self.tally.sent[fault + (".100k" if fault == "json.deep_nesting" and len(text) >= 200_000 else "")] += 1
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": job.token, "candidateText": text})
        if reply is None:
            return None
        code = reply["error"]["code"] if reply["kind"] == "error" else None
        if code in ("BRIDGE_JOB_NOT_FOUND", "BRIDGE_STEP_CONFLICT"):
            self._fail("lost_active_jobs", f"job {job.id} at {stage}: {code}")
            job.stage = None
            return None
        if not self._predicted(job, stage, expected, reply):
            self._fail("mispredictions", f"{expected} candidate at {stage} ({job.instance}) was answered {reply}")
        if expected == "LIMIT_EXCEEDED" and code == "LIMIT_EXCEEDED":
            return None  # refused: not a used step
        self._record(job, text, reply)
        return None

    def _predicted(self, job: JobModel, stage: str, expected: str, reply: dict[str, Any]) -> bool:
        code = reply["error"]["code"] if reply["kind"] == "error" else None
        if expected == "LIMIT_EXCEEDED":
            return code == "LIMIT_EXCEEDED"
        if expected == "MODEL_OUTPUT_INVALID":
            if job.repairs[stage] < int(self.catalog[job.instance].get("repairAttempts", 1)):
                job.repairs[stage] += 1
                return bool(reply["kind"] == "task" and reply["stage"] == stage)
            return code == "MODEL_OUTPUT_INVALID"
        if expected == "DATA_EXTRACTION_FAILED":
            return code == "DATA_EXTRACTION_FAILED"
        if stage == "core" and job.plan.selected:
            return bool(reply["kind"] == "task" and reply["stage"] == "data")
        return bool(reply["kind"] == "result")

    def _record(self, job: JobModel, text: str, reply: dict[str, Any]) -> None:
        from intentref.suite.properties.differential import canonical

        if len(text) <= MAX_KEPT_TEXT:
            job.used.append((job.token, text, canonical(reply), self._last_wire))
        if reply["kind"] == "task":
            job.token, job.stage, job.payload = reply["stepToken"], reply["stage"], reply["payload"]
        else:
            job.stage, job.terminal = None, canonical(reply)

    def _accept_fault(self) -> None:
        self._accept(broken=True)

    def _accept_malformed(self) -> None:
        from intentref.suite.generators.requests import malformed_request

        job = self._active_job()
        if job is None:
            return
        defect, request = malformed_request(self.d, "accept", job_id=job.id, step_token=job.token, heavy=self.heavy,
                                            objects_only=self.objects_only)
        self.tally.sent[defect] += 1
        reply = self._call(job.owner, "accept", request)
        if reply is not None and (reply["kind"] != "error" or reply["error"]["code"] not in KEEPS_JOB):
            self._fail("mispredictions", f"{defect} was answered {reply}")

    def _used_job(self) -> JobModel | None:
        jobs = [j for j in self._jobs() if j.used]
        return self.d.choice(jobs) if jobs else None

    def _replay(self) -> None:
        from intentref.suite.properties.differential import canonical

        job = self._used_job()
        if job is None:
            return
        token, text, expected, wire = self.d.choice(job.used)
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": token, "candidateText": text})
        if reply is None:
            return
        if reply["kind"] == "error" and reply["error"]["code"] == "BRIDGE_JOB_NOT_FOUND" and job.stage is None:
            job.used = []  # a terminal record may be reclaimed (spec: R-CAP-011): not a drift
            return
        if canonical(reply) != expected or (wire is not None and self._last_wire is not None and wire != self._last_wire):
            self._fail("replay_drifts", f"job {job.id}: {canonical(reply):.200} != {expected:.200}")

    def _conflict(self) -> None:
        job = self._used_job()
        if job is None:
            return
        token, text, _, _ = self.d.choice(job.used)
        other = text + self.d.choice([" ", "\n", "x", "\ud800"])
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": token, "candidateText": other})
        if reply is not None and not _is_error(reply, "BRIDGE_STEP_CONFLICT", "BRIDGE_JOB_NOT_FOUND" if job.stage is None else ""):
            self._fail("mispredictions", f"another text on a used step was answered {reply}")

    def _foreign(self) -> None:
        jobs = self._jobs()
        others = self._open()
        if not jobs or len(others) < 2:
            return self._connect()
        job = self.d.choice(jobs)
        index = self.d.choice([i for i in others if i != job.owner])
        if self.d.boolean():
            reply = self._call(index, "accept", {"jobId": job.id, "stepToken": job.token, "candidateText": "{}"})
        else:
            reply = self._call(index, "cancel", {"jobId": job.id})
        if reply is not None and not _is_error(reply, "BRIDGE_JOB_NOT_FOUND"):
            self._fail("mispredictions", f"another session's job was answered {reply}")
        return None

    def _stale(self) -> None:
        job = self._active_job()
        if job is None:
            return
        token = self.d.choice(["x" * 22, job.id, job.token + "x", ""])
        reply = self._call(job.owner, "accept", {"jobId": job.id, "stepToken": token, "candidateText": "{}"})
        if reply is not None and not _is_error(reply, "BRIDGE_STEP_CONFLICT"):
            self._fail("mispredictions", f"a token of no step was answered {reply}")

    def _cancel(self) -> None:
        from intentref.core.limits import MAX_CANCEL_DETAIL_BYTES as DETAIL_LIMIT
        from intentref.suite.generators.texts import detail_with_bytes
        from intentref.suite.properties.differential import canonical

        job = self._active_job()
        if job is None:
            return
        outcome = self.d.choice([None, *CANCEL_CODES])
        request: dict[str, Any] = {"jobId": job.id}
        if outcome is not None:
            request["outcome"] = outcome
        if self.d.boolean():
            request["detail"] = detail_with_bytes(self.d, self.d.choice([0, 1, 40, DETAIL_LIMIT]))
        reply = self._call(job.owner, "cancel", request)
        if reply is None:
            return
        if _is_error(reply, "BRIDGE_JOB_NOT_FOUND"):
            self._fail("lost_active_jobs", f"cancel of active job {job.id}")
        elif not _is_error(reply, CANCEL_CODES[outcome or "cancelled"]):
            self._fail("mispredictions", f"a cancel was answered {reply}")
        job.stage, job.terminal = None, canonical(reply)

    def _cancel_terminal(self) -> None:
        from intentref.suite.properties.differential import canonical

        ended = [j for j in self._jobs(active=False) if j.terminal is not None]
        if not ended:
            return
        job = self.d.choice(ended)
        reply = self._call(job.owner, "cancel", {"jobId": job.id, "outcome": self.d.choice(list(CANCEL_CODES))})
        if reply is None or _is_error(reply, "BRIDGE_JOB_NOT_FOUND"):
            return  # reclaimed (spec: R-CAP-011)
        if canonical(reply) != job.terminal:
            self._fail("replay_drifts", f"the terminal reply of {job.id} changed: {canonical(reply):.200}")

    def _cancel_malformed(self) -> None:
        from intentref.suite.generators.requests import malformed_request

        job = self._active_job()
        if job is None:
            return
        defect, request = malformed_request(self.d, "cancel", job_id=job.id, heavy=self.heavy,
                                            objects_only=self.objects_only)
        self.tally.sent[defect] += 1
        reply = self._call(job.owner, "cancel", request)
        if reply is not None and (reply["kind"] != "error" or reply["error"]["code"] not in KEEPS_JOB):
            self._fail("mispredictions", f"{defect} was answered {reply}")

    def _connect(self) -> None:  # the "connect" action
        if len(self._open()) < self.max_sessions:
            self._new_session()

    def _close(self) -> None:
        from intentref.suite.properties.case_writer import Call

        if len(self._open()) < 2:
            return
        index = self._session_index()
        self.calls.append(Call(self.names[index], "close"))
        self.sessions[index].close()
        self.sessions[index] = None


def _is_error(reply: dict[str, Any], *codes: str) -> bool:
    return reply.get("kind") == "error" and reply["error"].get("code") in codes


# --------------------------------------------------------------------------- replay


def load_cases(folder: Path) -> list[dict[str, Any]]:
    cases = []
    for kind in ("candidates", "sessions"):
        for path in sorted((folder / kind).glob("*.json")):
            cases.append(json.loads(path.read_text("utf-8")))
    return cases


def _loosen(expect: Any) -> Any:
    """An expectation of kind, code and stage only."""
    if not isinstance(expect, dict):
        return expect
    if expect.get("kind") == "error":
        return {"$error": {"code": expect["error"]["code"], "stage": expect["error"]["stage"]}}
    if expect.get("kind") == "task":
        return {"$task": {"stage": expect["stage"]}}
    return {"$subset": {"kind": expect.get("kind")}}


class _WellFormedSession(CallSession):
    """Replies with lone surrogates as U+FFFD, the form the cases record (any transport's form)."""

    def __init__(self, inner: Session) -> None:
        self._inner = inner

    def _call(self, op: str, request: Any) -> Reply:
        from intentref.suite.properties.differential import well_formed_json

        reply: Reply = getattr(self._inner, op)(request)
        return Reply(well_formed_json(reply.value), reply.text, reply.envelope)

    def release(self) -> None:
        self._inner.release()

    def close(self) -> None:
        self._inner.close()


class _WellFormedRun(Run):
    def __init__(self, run: Run) -> None:
        self._run = run

    def connect(self) -> Session:
        return _WellFormedSession(self._run.connect())

    def close(self) -> None:
        self._run.close()


# A case's number in the folder, and the line that says how the target disagrees with it
# (None: it agrees).
Verdict = tuple[int, str | None]


def replay(folder: Path, spec: TargetSpec, loose: bool = False, jobs: int | None = None) -> int:
    """Run every candidate and session case of ``folder`` against the target; exit 1 on any disagreement.

    The cases are dealt round-robin to ``jobs`` worker processes (default: the CPUs this
    process may use), each replaying its share against a target of its own, as the
    conformance runner's workers do; the lines are printed in the folder's order whatever
    the number of workers, so ``--jobs 1`` and ``--jobs N`` print the same.
    """
    from intentref.suite.execution.workers import default_jobs

    cases = load_cases(folder)
    if not cases:
        print(f"intentref fuzz: no candidate or session cases in {folder}", file=sys.stderr)
        return 2
    numbered = list(enumerate(cases))
    workers = max(1, min(default_jobs() if jobs is None else jobs, len(cases)))
    if workers == 1:
        shares = [replay_share(spec, numbered, loose)]
    else:
        # Forked workers start at once with the imports done; beside other threads a fork may
        # inherit a held lock, so then they start afresh (as workers.py decides).
        forkable = sys.platform.startswith("linux") and threading.active_count() == 1
        context = multiprocessing.get_context("fork" if forkable else "spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            shares = list(pool.map(replay_share, [spec] * workers, [numbered[i::workers] for i in range(workers)],
                                   [loose] * workers))  # fmt: skip
    name = shares[0][0]
    lines = [line for _, line in sorted(v for _, verdicts in shares for v in verdicts) if line is not None]
    for line in lines:
        print(line)
    print(f"replayed {len(cases)} cases against {name}: {len(cases) - len(lines)} agree, {len(lines)} disagree")
    return 1 if lines else 0


def replay_share(spec: TargetSpec, cases: list[tuple[int, dict[str, Any]]], loose: bool) -> tuple[str, list[Verdict]]:
    """Replay numbered ``cases`` against a target of ``spec`` made here: its name and each case's verdict."""
    from intentref.suite.cases.script import PASSED, run_case
    from intentref.suite.targets.base import load_instances

    target = spec.build()
    standard = load_instances()
    runs: dict[str, Any] = {}
    verdicts: list[Verdict] = []
    try:
        for number, case in cases:
            instances = {**standard, **case.get("instances", {})}
            key = json.dumps(instances, sort_keys=True)
            if key not in runs:
                runs[key] = target.open(instances, {})
            steps = [({**s, "expect": _loosen(s["expect"])} if loose and "expect" in s else s) for s in case["steps"]]
            outcome = run_case({"id": case["id"], "steps": steps}, _WellFormedRun(runs[key]), target.transport)
            line = None
            if outcome.outcome != PASSED:
                where = [str(m) for m in outcome.mismatches] or [outcome.detail]
                line = f"{case['id']} ({case.get('fault') or case['kind']}): {outcome.outcome}: " + "; ".join(where[:3])
            verdicts.append((number, line))
    finally:
        for opened in runs.values():
            opened.close()
        target.close()
    return target.name, verdicts
