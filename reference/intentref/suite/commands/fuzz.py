"""``intentref fuzz``: reproducible JSON cases for host developers, and replaying them against a target.

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
(conformance/README.md).  The writers are ``intentref.suite.properties.fuzz_cases``; the
session walker, which also drives ``intentref properties``'s long campaign, is
``intentref.suite.properties.walker``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

from intentref.core.limits import well_formed_json
from intentref.suite.properties.fuzz_cases import CASE_KINDS, write_cases
from intentref.suite.targets.base import InProcessRun, InProcessSession, Reply, Session
from intentref.suite.targets.options import add_target_arguments, target_from
from intentref.suite.targets.registry import LARGE_CALL_TIMEOUT, TargetSpec
from intentref.suite.usage import UsageError, worker_count


def add_parser(sub: Any) -> None:
    p = sub.add_parser("fuzz", help="write reproducible fuzz cases for host developers, or replay them against a target")
    p.add_argument("--seed", type=int, default=0, help="the seed (default 0): the same seed writes the same bytes")
    p.add_argument("--count", type=int, default=100, metavar="K", help="cases of each kind (default 100)")
    p.add_argument("--out", metavar="DIR", help="the folder to write (created; existing case files are replaced)")
    p.add_argument("--kind", action="append", choices=CASE_KINDS, help="only this kind (repeatable; default all)")
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
        from intentref.suite.commands.properties import preflight

        # A server already listening may refuse the credentials: asked once, before any worker (D-CNF-068).
        if spec.kind == "http" and (problem := preflight(spec)) is not None:
            print(f"intentref fuzz: the target {spec} cannot be used: {problem}", file=sys.stderr)
            return 2
        return replay(Path(args.replay), spec, loose=args.loose, jobs=args.jobs)
    if not args.out:
        print("intentref fuzz: --out DIR (to write cases) or --replay DIR (to replay them) is required", file=sys.stderr)
        return 2
    manifest = write_cases(Path(args.out), args.seed, args.count, tuple(args.kind or CASE_KINDS), heavy=args.heavy)
    print(f"wrote {sum(manifest['kinds'].values())} cases to {args.out} (seed {args.seed})")
    return 0


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


class _WellFormedSession(InProcessSession):
    """Replies with lone surrogates as U+FFFD, the form the cases record (any transport's form)."""

    def _call(self, op: str, request: Any) -> Reply:
        reply: Reply = getattr(self._session, op)(request)
        return Reply(well_formed_json(reply.value), reply.text, reply.envelope)

    def release(self) -> None:
        self._session.release()


class _WellFormedRun(InProcessRun):
    def connect(self) -> Session:
        return _WellFormedSession(self._bridge.connect())


# A case's number in the folder, and the line that says how the target disagrees with it
# (None: it agrees).
CaseLine = tuple[int, str | None]


def replay(folder: Path, spec: TargetSpec, loose: bool = False, jobs: int | None = None) -> int:
    """Run every candidate and session case of ``folder`` against the target; exit 1 on any disagreement.

    The cases are dealt round-robin to ``jobs`` worker processes (default: the CPUs this
    process may use; ``intentref.suite.execution.pool``), each replaying its share against a
    target of its own, as the conformance runner's workers do; the lines are printed in the
    folder's order whatever the number of workers, so ``--jobs 1`` and ``--jobs N`` print the same.
    """
    from intentref.suite.execution.pool import map_in_workers
    from intentref.suite.execution.workers import default_jobs

    cases = load_cases(folder)
    if not cases:
        print(f"intentref fuzz: no candidate or session cases in {folder}", file=sys.stderr)
        return 2
    numbered = list(enumerate(cases))
    workers = max(1, min(default_jobs() if jobs is None else jobs, len(cases)))
    shares = map_in_workers(functools.partial(replay_share, spec, loose=loose),
                            [numbered[i::workers] for i in range(workers)], workers)  # fmt: skip
    name = shares[0][0]
    lines = [line for _, line in sorted(v for _, found in shares for v in found) if line is not None]
    for line in lines:
        print(line)
    print(f"replayed {len(cases)} cases against {name}: {len(cases) - len(lines)} agree, {len(lines)} disagree")
    return 1 if lines else 0


def replay_share(spec: TargetSpec, cases: list[tuple[int, dict[str, Any]]], loose: bool) -> tuple[str, list[CaseLine]]:
    """Replay numbered ``cases`` against a target of ``spec`` made here: its name and each case's line."""
    from intentref.suite.cases.script import PASSED, run_case
    from intentref.suite.targets.base import load_instances

    target = spec.build()
    standard = load_instances()
    runs: dict[str, Any] = {}
    found: list[CaseLine] = []
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
            found.append((number, line))
    finally:
        for opened in runs.values():
            opened.close()
        target.close()
    return target.name, found
