"""``intentref properties``: the property suite and a call campaign against a target.

The target flags are every command's (``targets.options``): without one, the bundled
server over stdio (D-CNF-057).  Two phases, one report:

1. pytest runs the property modules (``properties/``, shipped in the wheel) against the
   target, with the Hypothesis profile ``intentref-ci`` or ``intentref-long`` and a pinned
   seed.  ``--jobs N`` (default: the CPUs this process may use) deals the modules to N
   pytest children, each with a target of its own; a pinned seed fixes each property's
   examples whichever child runs it, so the verdicts are those of ``--jobs 1``.  Any target but the in-process reference is checked differentially: a reply
   that differs from the reference's (tokens compared as placeholders) fails with the
   shrunk example written as a conformance case.
2. A campaign: a seeded random walk of calls over a few sessions (valid and broken
   candidates, malformed JSON, 100k-deep nesting, lone surrogates, wrong types, and in
   the long profile 10 MB texts), with progress bars, counting uncaught exceptions,
   non-replies, lost active jobs, replay drifts, divergences and wrong predictions.

Only the normative projection of each reply is compared (D-CNF-020), and every failure
has a level (D-CNF-021): ``normative`` (a seed rule broken) or ``reference`` (decided
differently, with the decisions).  The long profile makes at least 100,000 campaign calls.
Exit 0 when nothing failed at ``--level`` (``all`` by default; ``normative`` ignores
reference-level failures), 1 otherwise, 2 for a target that cannot start, 130 when
interrupted (the report and --json are still written, D-CNF-023).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from intentref.suite.targets.options import add_target_arguments, era_specs, header_lines, target_from
from intentref.suite.targets.registry import LARGE_CALL_TIMEOUT, TargetSpec
from intentref.suite.usage import HEADERS_VARIABLE, UsageError, worker_count

PROFILES: Final = ("ci", "long", "smoke")
LEVELS: Final = ("normative", "all")
# Campaign calls per profile: the long one alone meets the 100,000.
CAMPAIGN_CALLS: Final = {"ci": 2_000, "long": 100_000, "smoke": 200}
EPISODE_CALLS: Final = 40  # calls per set of sessions; a divergence reports one episode
# Without a terminal the progress bars cannot redraw: a plain line every this many calls
# keeps a CI log alive without flooding it (2,000 calls of the ci profile: 8 lines).
PROGRESS_EVERY: Final = 250
# How long an interrupted pytest child may take to write its counters before it is killed:
# it stops at once on an idle machine, but on a loaded one (a CI runner busy with other
# tests) finishing the example in hand and writing the report took longer than 10 s.
CHILD_GRACE_SECONDS: Final = 30.0
INTERRUPTED: Final = 130  # the shell's status for a run ended by a signal (128 + SIGINT)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("properties", help="run the property suite and a call campaign against a target")
    add_target_arguments(p, both=True)
    p.add_argument("--profile", choices=PROFILES, default="ci", help="ci (fast, default), long (>= 100,000 calls), smoke")
    p.add_argument("--seed", type=int, default=None, help="pin the seed (default: a new one, printed)")
    p.add_argument("--calls", type=int, default=None, help="campaign calls (default: 2,000 for ci, 100,000 for long)")
    p.add_argument("--level", choices=LEVELS, default="all",
                   help="normative: only breaks of seed rules fail the run; reference-level divergences "
                        "(decided differently) are reported (default: all)")  # fmt: skip
    p.add_argument("-k", dest="keyword", default=None, help="only properties matching this pytest -k expression")
    p.add_argument("--no-differential", action="store_true", help="do not compare replies with the reference")
    p.add_argument("--no-pytest", action="store_true", help="skip the property modules (campaign only)")
    p.add_argument("--cases-out", metavar="FILE", help="write the conformance cases of any divergence to FILE")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the final counts to FILE (even when interrupted)")
    p.add_argument("--jobs", type=worker_count, default=None, metavar="N",
                   help="pytest processes the property modules are dealt to (default: the CPUs this process may use)")  # fmt: skip
    p.set_defaults(run=run)


@dataclass
class RunState:
    """What a run has so far: the report is made from it however the run ends."""

    pytest_status: int | None = None  # None: not run
    pytest_stats: Counter[str] = field(default_factory=Counter)
    outcomes: list[dict[str, Any]] = field(default_factory=list)  # one per failed property, with its level
    cases: list[Any] = field(default_factory=list)
    tally: Any = None
    interrupted: bool = False


def run(args: argparse.Namespace) -> int:
    from intentref.suite.targets.preflight import era_refusal

    try:
        spec = target_from(args, LARGE_CALL_TIMEOUT)
    except UsageError as exc:
        print(f"intentref properties: {exc}", file=sys.stderr)
        return 2
    if args.calls is not None and args.calls < 0:
        print("intentref properties: --calls must be 0 or more", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    specs = era_specs(spec, args.era)
    eras: dict[str, dict[str, Any]] = {}
    found: list[Any] = []  # the conformance cases of the divergences, of every era
    for era_spec in specs:  # spec: D-CNF-070 -- with --era both, each era a full run of its own
        if len(specs) > 1 and (refusal := era_refusal(era_spec)):  # spec: D-CNF-071 -- unsupported, one line
            print(f"intentref properties: era {era_spec.era} unsupported: {refusal}", flush=True)
            eras[era_spec.era] = {"unsupported": refusal, "passed": True}
            continue
        problem = preflight(era_spec)
        if problem is not None:
            print(f"intentref properties: the target {era_spec} cannot be used: {problem}", file=sys.stderr)
            return 2
        eras[era_spec.era] = figures = _judge(args, era_spec, seed, found)
        if figures["interrupted"]:
            break
    if all("unsupported" in figures for figures in eras.values()):
        print(f"intentref properties: the target {spec} speaks neither era", file=sys.stderr)
        return 2
    if len(specs) > 1:
        figures = {"eraAsked": args.era, "eras": eras, "passed": all(f["passed"] for f in eras.values()),
                   "interrupted": any(f.get("interrupted") for f in eras.values())}  # fmt: skip
    if args.cases_out and found:
        Path(args.cases_out).write_text(json.dumps({"area": "NEW", "title": "Found by intentref properties",
                                                    "cases": found}, ensure_ascii=True, indent=1) + "\n", "utf-8")  # fmt: skip
        print(f"wrote {len(found)} conformance cases to {args.cases_out}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1) + "\n", "utf-8")
    if figures["interrupted"]:
        return INTERRUPTED
    return 0 if figures["passed"] else 1


def _judge(args: argparse.Namespace, spec: TargetSpec, seed: int, found: list[Any]) -> dict[str, Any]:
    """Both phases against ``spec`` in its era; the figures of the report, the cases found added to ``found``."""
    from intentref.suite.execution.workers import default_jobs
    from intentref.suite.properties.targets import STATS, Tally

    STATS.clear()  # the counters are the process's: an earlier era's must not count here
    calls = args.calls if args.calls is not None else CAMPAIGN_CALLS[args.profile]
    differential = not args.no_differential and spec.kind != "in-process"
    print(f"intentref properties: target {spec}, era {spec.era}, profile {args.profile}, seed {seed}, level {args.level}"
          f"{', differential' if differential else ''}", flush=True)  # fmt: skip
    started = time.monotonic()
    state = RunState(tally=Tally())
    with _sigterm_as_interrupt():
        try:
            if not args.no_pytest:
                jobs = default_jobs() if args.jobs is None else args.jobs
                run_pytest(spec, args.profile, seed, args.keyword, differential, state, jobs)
            if calls > 0:
                campaign(spec, seed, calls, heavy=args.profile == "long", differential=differential, tally=state.tally)
        except KeyboardInterrupt:
            state.interrupted = True
            print("intentref properties: interrupted; reporting what ran", file=sys.stderr, flush=True)
    seconds = time.monotonic() - started
    tally = state.tally
    campaign_cases = [_case_of(note) for note in tally.notes if note.startswith("divergence:")]
    cases = state.cases + campaign_cases
    figures = report(tally, state.pytest_stats, state.pytest_status, seconds, seed, args.profile, spec)
    figures.update(verdict(state, Counter({k: v for k, v in STATS.items() if k.startswith("divergences.")}),
                           campaign_cases, args.level))  # fmt: skip
    _print_levels(figures)
    found.extend(cases)
    return figures


def preflight(spec: TargetSpec) -> str | None:
    """Why the target cannot even start (a module that does not import, a command that is not
    there), found in a second instead of as one error per property; None when it answers."""
    from intentref.suite.targets.base import TargetCannotStart
    from intentref.suite.targets.preflight import connect_once

    try:
        target = spec.build()
    except Exception as exc:  # the spec's own error: ImportError, ValueError, ...
        return f"{type(exc).__name__}: {exc}"
    try:
        connect_once(target)
    except TargetCannotStart as exc:  # its own words name the option that helps (D-CNF-068)
        return str(exc)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            target.close()
    return None


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the run as Ctrl-C does: the report and --json are still written."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def verdict(state: RunState, campaign_levels: Counter[str], campaign_cases: list[Any], level: str) -> dict[str, Any]:
    """Failures by level (D-CNF-021) and whether the run passed at ``level``.

    Normative: a property that failed for a reason the seeds state, a normative divergence,
    an uncaught exception, a non-reply or a lost active job.  Reference: a property that
    failed only on decided assertions or reference-level divergences, a reference-level
    campaign divergence, and the walker's own predictions of the reference (replay drifts,
    D-BRG-007; predicted codes, D-BRG-003, D-BRG-008, D-REQ-001).
    """
    tally = state.tally
    property_failures = {lvl: [o for o in state.outcomes if o["level"] == lvl] for lvl in ("normative", "reference")}
    normative = (len(property_failures["normative"]) + campaign_levels["divergences.normative"]
                 + tally.uncaught_exceptions + tally.non_replies + tally.lost_active_jobs)  # fmt: skip
    reference = (len(property_failures["reference"]) + campaign_levels["divergences.reference"]
                 + tally.replay_drifts + tally.mispredictions + tally.lone_surrogates_lost)  # fmt: skip
    # pytest failing with no failed property recorded (a collection error, a -k that selects
    # nothing: exit 5) counts as a normative failure: nothing was shown to hold.
    unexplained = state.pytest_status not in (0, None) and not state.outcomes
    decisions = sorted({d for o in property_failures["reference"] for d in o["decisions"]}
                       | {d for c in campaign_cases for d in c.get("decisions", [])})  # fmt: skip
    passed = not state.interrupted and not unexplained and normative == 0 and (level == "normative" or reference == 0)
    return {"level": level, "interrupted": state.interrupted, "normativeFailures": normative + int(unexplained),
            "referenceFailures": reference, "decisionsDiffering": decisions,
            "failedProperties": state.outcomes, "passed": passed}  # fmt: skip


def _print_levels(figures: dict[str, Any]) -> None:
    print(f"normative failures: {figures['normativeFailures']}   reference-level (decided differently): "
          f"{figures['referenceFailures']}" + (f" -- {', '.join(figures['decisionsDiffering'])}"
                                               if figures["decisionsDiffering"] else ""), flush=True)  # fmt: skip


def _case_of(note: str) -> Any:
    text = note.split("conformance case", 1)[-1]
    return json.loads(text[text.index("\n") + 1 :])


# --------------------------------------------------------------------------- phase 1: pytest


def run_pytest(spec: TargetSpec, profile: str, seed: int, keyword: str | None, differential: bool, state: RunState,
               jobs: int = 1) -> None:  # fmt: skip
    """The property modules in pytest children; their counters, failures and cases land in ``state``.

    With ``jobs`` above 1 the modules are dealt round-robin to that many children (never
    more than there are modules), each writing files of its own, summed here.  Without a
    terminal, pytest runs verbose: one line per property as it ends.
    """
    from intentref._paths import data_dir

    folder = data_dir("properties")
    modules = sorted(str(path) for path in folder.glob("test_*.py"))
    children_count = max(1, min(jobs, len(modules)))
    shares = [[str(folder)]] if children_count == 1 else [modules[i::children_count] for i in range(children_count)]
    with tempfile.TemporaryDirectory(prefix="intentref-properties-") as tmp:
        children: list[tuple[subprocess.Popen[bytes], dict[str, Path]]] = []
        sys.stdout.flush()
        for number, paths in enumerate(shares):
            files = {name: Path(tmp) / f"{number}-{name}" for name in ("stats.json", "cases.jsonl", "outcomes.jsonl")}
            command = [sys.executable, "-m", "pytest", *paths, "-c", str(folder / "pytest.ini"), "--rootdir",
                       str(folder), "-v" if not sys.stdout.isatty() else "-q", f"--hypothesis-seed={seed}",
                       f"--hypothesis-profile=intentref-{profile}",
                       "--intentref-properties-target", spec.text,
                       "--intentref-properties-era", spec.era]  # fmt: skip
            if not differential:
                command.append("--intentref-no-differential")
            if keyword:
                command += ["-k", keyword]
            # The headers go in the environment: a command line would show a secret (D-CNF-067).
            env = {**os.environ, "INTENTREF_PROPERTIES_STATS": str(files["stats.json"]),
                   "INTENTREF_HYPOTHESIS_SEED": str(seed), "INTENTREF_PROPERTIES_CASES": str(files["cases.jsonl"]),
                   "INTENTREF_PROPERTIES_OUTCOMES": str(files["outcomes.jsonl"]),
                   HEADERS_VARIABLE: header_lines(spec.headers)}  # fmt: skip
            # The user's own folder: a relative path in the target's command means what it meant
            # to them (the preflight, in this process, read it so too).  The suite's pytest.ini
            # and rootdir are given, so nothing of that folder's own pytest setup applies.
            children.append((subprocess.Popen(command, env=env), files))
        try:
            statuses = [child.wait() for child, _ in children]
            state.pytest_status = _combined_status(statuses)
        except KeyboardInterrupt:
            _stop([child for child, _ in children])
            raise
        finally:
            state.pytest_stats = sum((_read_json(files["stats.json"], Counter()) for _, files in children), Counter())
            state.cases = [case for _, files in children for case in _read_lines(files["cases.jsonl"])]
            state.outcomes = [outcome for _, files in children for outcome in _read_lines(files["outcomes.jsonl"])]


def _combined_status(statuses: list[int]) -> int:
    """pytest's exit status of the children as one run: the first failing child's, and 5
    (nothing collected) only when no child ran anything (``-k`` may select nothing of one share)."""
    failing = [status for status in statuses if status not in (0, 5)]
    if failing:
        return failing[0]
    return 0 if 0 in statuses else 5


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """Let interrupted pytest children write their counters (Ctrl-C reached them too; SIGTERM is
    forwarded), all within one grace: the run ends within 2 + CHILD_GRACE_SECONDS however many."""
    for grace, forward in ((2.0, False), (CHILD_GRACE_SECONDS, True)):
        alive = [child for child in children if child.poll() is None]
        for child in alive if forward else ():
            child.send_signal(signal.SIGTERM)  # its conftest turns that into KeyboardInterrupt
        deadline = time.monotonic() + grace
        for child in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()


def _read_json(path: Path, default: Any) -> Any:
    try:
        return Counter(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError):
        return default


def _read_lines(path: Path) -> list[Any]:
    try:
        lines = path.read_text("utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        with contextlib.suppress(ValueError):  # a line cut short by an interrupt
            out.append(json.loads(line))
    return out


# --------------------------------------------------------------------------- phase 2: the campaign


def campaign(spec: TargetSpec, seed: int, calls: int, heavy: bool, differential: bool, tally: Any = None) -> Any:
    """``calls`` calls of the session walker against the target, in episodes of fresh sessions.

    ``tally`` (a new one by default) is filled as the calls go, so an interrupted campaign
    still reports what it did.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from intentref.suite.generators.catalog import catalog_instances, separate_sessions
    from intentref.suite.generators.draw import RandomDraw
    from intentref.suite.properties.differential import DifferentialTarget
    from intentref.suite.properties.targets import Tally, close_runs, shared_run
    from intentref.suite.properties.walker import Walker

    target: Any = spec.build()
    if differential:
        target = DifferentialTarget(target)
    tally = Tally() if tally is None else tally
    draw = RandomDraw(random.Random(f"campaign/{seed}"))
    console = Console(stderr=True)
    lines = not console.is_terminal  # no redrawing bars: plain lines instead
    next_line = PROGRESS_EVERY
    columns = (TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}"))  # fmt: skip
    try:
        with Progress(*columns, console=console, transient=False, disable=lines) as progress:
            overall = progress.add_task("all calls", total=calls, status="")
            per_tool = {op: progress.add_task(op, total=calls, status="") for op in ("prepare", "accept", "cancel")}
            while tally.total < calls:
                run = shared_run(target, catalog_instances(target), {})
                run.new_case()  # the sessions the last episode handed back may be taken again
                run.begin_example(("R-BRG-006", "R-IDM-001"))
                walker = Walker(run, draw, tally, heavy=heavy, objects_only=target.transport == "mcp",
                                max_sessions=3 if separate_sessions(target) else 1,
                                instances=catalog_instances(target))  # fmt: skip
                try:
                    for _ in range(EPISODE_CALLS):
                        if tally.total >= calls:
                            break
                        walker.step()
                finally:
                    walker.close(release=True)
                progress.update(overall, completed=tally.total, status=_status(tally))
                for op, task_id in per_tool.items():
                    progress.update(task_id, completed=tally.calls[op])
                if lines and (tally.total >= next_line or tally.total >= calls):
                    print(f"campaign: {tally.total:,}/{calls:,} calls  {_status(tally)}", flush=True)
                    next_line = (tally.total // PROGRESS_EVERY + 1) * PROGRESS_EVERY
    finally:
        close_runs()
        target.close()
    return tally


def _status(tally: Any) -> str:
    return (f"exc {tally.uncaught_exceptions}  lost {tally.lost_active_jobs}  drift {tally.replay_drifts}"
            f"  div {tally.divergences}")  # fmt: skip


# --------------------------------------------------------------------------- the report


def _campaign_refusals() -> int:
    from intentref.suite.properties.targets import STATS

    return int(STATS.get("protocol_refusals", 0))


def report(tally: Any, pytest_stats: Counter[str], pytest_status: int | None, seconds: float, seed: int, profile: str,
           spec: TargetSpec) -> dict[str, Any]:  # fmt: skip
    from rich.console import Console
    from rich.table import Table

    tools = ("prepare", "accept", "cancel")
    figures: dict[str, Any] = {
        "target": spec.text, "profile": profile, "seed": seed, "seconds": round(seconds, 1),
        "pytest": {None: "not run", 0: "passed"}.get(pytest_status, f"failed (exit {pytest_status})"),
        "calls": {op: tally.calls[op] + pytest_stats.get(f"calls.{op}", 0) for op in tools},
        "campaignCalls": tally.total,
        "propertyCalls": sum(pytest_stats.get(f"calls.{op}", 0) for op in tools),
        "uncaughtExceptions": tally.uncaught_exceptions + pytest_stats.get("uncaught_exceptions", 0),
        "nonReplies": tally.non_replies + pytest_stats.get("non_replies", 0),
        "lostActiveJobs": tally.lost_active_jobs,
        "loneSurrogatesLost": tally.lone_surrogates_lost,
        "replayDrifts": tally.replay_drifts,
        "divergences": tally.divergences + pytest_stats.get("divergences", 0),
        "mispredictions": tally.mispredictions,
        # Malformed calls the target's protocol layer refused, as seed 000 allows (D-CNF-055).
        "protocolRefusals": _campaign_refusals() + pytest_stats.get("protocol_refusals", 0),
    }  # fmt: skip
    figures["totalCalls"] = sum(figures["calls"].values())
    figures["campaignEdgeCases"] = tally.edge_cases()
    table = Table(title=f"intentref properties — {spec}, profile {profile}, seed {seed}")
    table.add_column("measure")
    table.add_column("count", justify="right")
    for op in tools:
        table.add_row(f"calls: {op}", f"{figures['calls'][op]:,}")
    table.add_row("calls: total", f"{figures['totalCalls']:,}")
    for label, count in figures["campaignEdgeCases"].items():
        table.add_row(f"  of which {label}", f"{count:,}", style="dim")
    for label, key in (("uncaught exceptions", "uncaughtExceptions"), ("non-replies", "nonReplies"),
                       ("lost active jobs", "lostActiveJobs"), ("replay drifts", "replayDrifts"),
                       ("divergences", "divergences"), ("wrong predictions", "mispredictions"),
                       ("lone surrogates not carried", "loneSurrogatesLost")):  # fmt: skip
        table.add_row(label, str(figures[key]), style="red" if figures[key] else None)
    table.add_row("refused by the protocol layer (allowed)", str(figures["protocolRefusals"]), style="dim")
    table.add_row("property modules", figures["pytest"], style=None if pytest_status in (0, None) else "red")
    table.add_row("time", f"{seconds:,.1f} s")
    console = Console()
    console.print(table)
    for note in tally.notes[:10]:
        console.print(note, markup=False, highlight=False)
    return figures
