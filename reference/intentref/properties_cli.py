"""``intentref properties``: the property suite and a call campaign against a target.

    intentref properties [--in-process | --stdio CMD | --http URL | --harness CMD | --python MOD:ATTR]
                         [--profile ci|long] [--seed N] [--calls N] [-k EXPR] [--no-differential]

Two phases, one report:

1. pytest runs the property modules (``properties/``, shipped in the wheel) against the
   target, with the Hypothesis profile ``intentref-ci`` or ``intentref-long`` and a pinned
   seed.  Any target but the in-process reference is checked differentially: a reply
   that differs from the reference's (tokens compared as placeholders) fails with the
   shrunk example written as a conformance case.
2. A campaign: a seeded random walk of calls over a few sessions (valid and broken
   candidates, malformed JSON, 100k-deep nesting, lone surrogates, wrong types, and in
   the long profile 10 MB texts), with progress bars, counting uncaught exceptions,
   non-replies, lost active jobs, replay drifts, divergences and wrong predictions.

The long profile makes at least 100,000 campaign calls.  Exit 0 when pytest passed and
every counter but the calls is 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

PROFILES: Final = ("ci", "long", "smoke")
# Campaign calls per profile: the long one alone meets the 100,000.
CAMPAIGN_CALLS: Final = {"ci": 2_000, "long": 100_000, "smoke": 200}
EPISODE_CALLS: Final = 40  # calls per set of sessions; a divergence reports one episode


def add_parser(sub: Any) -> None:
    from .fuzz import target_options

    p = sub.add_parser("properties", help="run the property suite and a call campaign against a target")
    target_options(p)
    p.add_argument("--profile", choices=PROFILES, default="ci", help="ci (fast, default), long (>= 100,000 calls), smoke")
    p.add_argument("--seed", type=int, default=None, help="pin the seed (default: a new one, printed)")
    p.add_argument("--calls", type=int, default=None, help="campaign calls (default: 2,000 for ci, 100,000 for long)")
    p.add_argument("-k", dest="keyword", default=None, help="only properties matching this pytest -k expression")
    p.add_argument("--no-differential", action="store_true", help="do not compare replies with the reference")
    p.add_argument("--no-pytest", action="store_true", help="skip the property modules (campaign only)")
    p.add_argument("--cases-out", metavar="FILE", help="write the conformance cases of any divergence to FILE")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the final counts to FILE")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .fuzz import target_spec

    spec = target_spec(args)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    calls = args.calls if args.calls is not None else CAMPAIGN_CALLS[args.profile]
    differential = not args.no_differential and spec != "in-process"
    print(f"intentref properties: target {spec}, profile {args.profile}, seed {seed}"
          f"{', differential' if differential else ''}", flush=True)  # fmt: skip
    started = time.monotonic()
    pytest_status: int | None = None  # None: not run
    pytest_stats = Counter[str]()
    cases: list[Any] = []
    if not args.no_pytest:
        pytest_status, pytest_stats, cases = run_pytest(spec, args.profile, seed, args.keyword, differential)
    from ._property_targets import Tally

    tally = Tally()
    if calls > 0:
        tally = campaign(spec, seed, calls, heavy=args.profile == "long", differential=differential)
    seconds = time.monotonic() - started
    cases += [_case_of(note) for note in tally.notes if note.startswith("divergence:")]
    figures = report(tally, pytest_stats, pytest_status, seconds, seed, args.profile, spec)
    if args.cases_out and cases:
        Path(args.cases_out).write_text(json.dumps({"area": "NEW", "title": "Found by intentref properties",
                                                    "cases": cases}, ensure_ascii=True, indent=1) + "\n", "utf-8")  # fmt: skip
        print(f"wrote {len(cases)} conformance cases to {args.cases_out}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1) + "\n", "utf-8")
    return 0 if pytest_status in (0, None) and tally.clean else 1


def _case_of(note: str) -> Any:
    text = note.split("conformance case", 1)[-1]
    return json.loads(text[text.index("\n") + 1 :])


# --------------------------------------------------------------------------- phase 1: pytest


def run_pytest(spec: str, profile: str, seed: int, keyword: str | None, differential: bool
               ) -> tuple[int, Counter[str], list[Any]]:  # fmt: skip
    from ._paths import data_dir

    folder = data_dir("properties")
    with tempfile.TemporaryDirectory(prefix="intentref-properties-") as tmp:
        stats_file, cases_file = Path(tmp) / "stats.json", Path(tmp) / "cases.jsonl"
        command = [sys.executable, "-m", "pytest", str(folder), "-c", str(folder / "pytest.ini"), "--rootdir",
                   str(folder), "-q", f"--hypothesis-seed={seed}", f"--hypothesis-profile=intentref-{profile}",
                   "--intentref-properties-target", spec]  # fmt: skip
        if not differential:
            command.append("--intentref-no-differential")
        if keyword:
            command += ["-k", keyword]
        env = {**os.environ, "INTENTREF_PROPERTIES_STATS": str(stats_file), "INTENTREF_HYPOTHESIS_SEED": str(seed),
               "INTENTREF_PROPERTIES_CASES": str(cases_file)}  # fmt: skip
        status = subprocess.call(command, env=env, cwd=tmp)
        stats = Counter(json.loads(stats_file.read_text("utf-8"))) if stats_file.exists() else Counter()
        cases = [json.loads(line) for line in cases_file.read_text("utf-8").splitlines()] if cases_file.exists() else []
    return status, stats, cases


# --------------------------------------------------------------------------- phase 2: the campaign


def campaign(spec: str, seed: int, calls: int, heavy: bool, differential: bool) -> Any:
    """``calls`` calls of the session walker against the target, in episodes of fresh sessions."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ._property_targets import (
        DifferentialTarget,
        Tally,
        catalog_instances,
        close_runs,
        make_target,
        separate_sessions,
        shared_run,
    )
    from ._strategies_impl import RandomDraw
    from .fuzz import Walker

    target: Any = make_target(spec)
    if differential:
        target = DifferentialTarget(target)
    tally = Tally()
    draw = RandomDraw(random.Random(f"campaign/{seed}"))
    columns = (TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}"))  # fmt: skip
    try:
        with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
            overall = progress.add_task("all calls", total=calls, status="")
            per_tool = {op: progress.add_task(op, total=calls, status="") for op in ("prepare", "accept", "cancel")}
            while tally.total < calls:
                run = shared_run(target, catalog_instances(target), {})
                begin = getattr(run, "begin_example", None)
                if begin is not None:
                    begin(("R-BRG-006", "R-IDM-001"))
                walker = Walker(run, draw, tally, heavy=heavy, objects_only=target.transport == "mcp",
                                max_sessions=3 if separate_sessions(target) else 1,
                                instances=catalog_instances(target))  # fmt: skip
                try:
                    for _ in range(EPISODE_CALLS):
                        if tally.total >= calls:
                            break
                        walker.step()
                finally:
                    walker.close()
                progress.update(overall, completed=tally.total, status=_status(tally))
                for op, task_id in per_tool.items():
                    progress.update(task_id, completed=tally.calls[op])
    finally:
        close_runs()
        target.close()
    return tally


def _status(tally: Any) -> str:
    return (f"exc {tally.uncaught_exceptions}  lost {tally.lost_active_jobs}  drift {tally.replay_drifts}"
            f"  div {tally.divergences}")  # fmt: skip


# --------------------------------------------------------------------------- the report


def report(tally: Any, pytest_stats: Counter[str], pytest_status: int | None, seconds: float, seed: int, profile: str,
           spec: str) -> dict[str, Any]:  # fmt: skip
    from rich.console import Console
    from rich.table import Table

    tools = ("prepare", "accept", "cancel")
    figures: dict[str, Any] = {
        "target": spec, "profile": profile, "seed": seed, "seconds": round(seconds, 1),
        "pytest": {None: "not run", 0: "passed"}.get(pytest_status, f"failed (exit {pytest_status})"),
        "calls": {op: tally.calls[op] + pytest_stats.get(f"calls.{op}", 0) for op in tools},
        "campaignCalls": tally.total,
        "propertyCalls": sum(pytest_stats.get(f"calls.{op}", 0) for op in tools),
        "uncaughtExceptions": tally.uncaught_exceptions + pytest_stats.get("uncaught_exceptions", 0),
        "nonReplies": tally.non_replies + pytest_stats.get("non_replies", 0),
        "lostActiveJobs": tally.lost_active_jobs,
        "replayDrifts": tally.replay_drifts,
        "divergences": tally.divergences + pytest_stats.get("divergences", 0),
        "mispredictions": tally.mispredictions,
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
                       ("divergences", "divergences"), ("wrong predictions", "mispredictions")):  # fmt: skip
        table.add_row(label, str(figures[key]), style="red" if figures[key] else None)
    table.add_row("property modules", figures["pytest"], style=None if pytest_status in (0, None) else "red")
    table.add_row("time", f"{seconds:,.1f} s")
    console = Console()
    console.print(table)
    for note in tally.notes[:10]:
        console.print(note, markup=False, highlight=False)
    return figures
