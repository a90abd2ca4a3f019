"""``intentref host``: judge a host of the protocol by what it does.

Exit status: 0 when every scenario passes at the chosen level, 1 when one fails, 2 for a
command-line mistake (reported in one line before anything runs), 3 when the host never
reached the server in any scenario (a host that cannot run: one line with its exit status
and the end of its stderr).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from intentref.suite.reports.model import Report

USAGE_STATUS: Final = 2
FAIL_STATUS: Final = 1
CANNOT_RUN_STATUS: Final = 3  # as `intentref conformance` says of a target that could not start
# The rules a host is judged by, for the reader of its report.
RULES_NOTE: Final = ("Rules: seed 000's host rules (R-HST, normative), the contract (D-HST-001) and the reference "
                     "host's choices (D-HST, reference).")  # fmt: skip


def add_parser(sub: Any) -> None:
    p = sub.add_parser("host", help="judge a host (the program that calls the tools and runs a model) against seed 000's host rules",
                       description=__doc__.splitlines()[0] if __doc__ else None)  # fmt: skip
    p.add_argument("--command", required=True, metavar="COMMAND",
                   help="the host's command line with the placeholders {server}, {model} and {request}")  # fmt: skip
    p.add_argument("--http", action="store_true",
                   help="serve over streamable HTTP: the command takes {url} instead of {server}")  # fmt: skip
    from intentref.suite.targets.options import BOTH
    from intentref.suite.targets.registry import ERAS

    p.add_argument("--era", choices=(*ERAS, BOTH), default="auto",
                   help="MCP era the judge's server speaks: auto (both, the host's choice; default), 2026 "
                        "(2026-07-28), legacy (initialize handshake) or both (each scenario in each, D-CNF-070)")  # fmt: skip
    p.add_argument("--scenario", action="append", default=[], metavar="FILE",
                   help="run this scenario file (repeatable; default: the catalogue conformance/hosts/*.json)")  # fmt: skip
    p.add_argument("--level", choices=("normative", "reference"), default="normative",
                   help="which violations fail the run (default normative: seed rules and the contract)")  # fmt: skip
    p.add_argument(
        "--timeout", type=float, default=30.0, help="seconds a host gets per scenario run (default 30)"
    )
    p.add_argument("--jobs", type=int, default=2, help="scenarios run at once (default 2)")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the JSON report")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--html", metavar="FILE", help="write an HTML report")
    p.add_argument("--markdown", metavar="FILE",
                   help="write a short Markdown summary (also appended to $GITHUB_STEP_SUMMARY when it is set)")
    p.add_argument("--fuzz", action="store_true", help="draw random scenarios (Hypothesis) instead of the catalogue")
    p.add_argument("--seed", type=int, default=0, help="with --fuzz: the seed (the same seed draws the same scenarios)")
    p.add_argument("--count", type=int, default=20, metavar="K", help="with --fuzz: scenarios to draw (default 20)")
    p.add_argument("--out", metavar="DIR", default=".",
                   help="with --fuzz: where the shrunk scenario of a failure is written (default .)")  # fmt: skip
    p.set_defaults(run=run)


def _usage(message: str) -> int:
    print(f"intentref host: {message}", file=sys.stderr)
    return USAGE_STATUS


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: `intentref --help` imports this module for its argparse only.
    from intentref.suite.cases.script import FAILED
    from intentref.suite.host import judge
    from intentref.suite.reports import console, html, junit, markdown, output
    from intentref.suite.targets.options import BOTH, eras_of

    try:
        argv = judge.check_command(args.command, http=args.http)
        for flag, path in (("--json", args.json_out), ("--junit", args.junit), ("--html", args.html),
                           ("--markdown", args.markdown)):
            if path and (problem := output.output_problem(path)):
                raise judge.UsageProblem(f"{flag} {path}: {problem}")
        if args.timeout <= 0 or args.jobs < 1 or args.count < 1:
            raise judge.UsageProblem("--timeout, --jobs and --count must be positive")
        if args.fuzz:
            if args.era != "auto":
                raise judge.UsageProblem("--fuzz serves both eras: give --era with the catalogue or --scenario")
            if args.scenario:
                raise judge.UsageProblem(
                    "--fuzz draws its own scenarios: give --scenario or --fuzz, not both"
                )
            out = pathlib.Path(args.out)
            try:  # a folder that does not exist yet is made, as --json makes its file
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise judge.UsageProblem(f"--out {args.out}: cannot make the folder: {exc.strerror}") from None
            from intentref.suite.host import fuzz

            return fuzz.run_fuzz(argv, seed=args.seed, count=args.count, out=out, level=args.level,
                                 timeout=args.timeout, jobs=args.jobs, http=args.http)  # fmt: skip
        paths = [pathlib.Path(p) for p in args.scenario] or judge.catalogue_paths()
        scenarios = [judge.with_era(scenario, era) for scenario in judge.load_scenarios(paths) for era in eras_of(args.era)]
    except judge.UsageProblem as problem:
        return _usage(str(problem))
    started = time.monotonic()
    # Over HTTP the judge starts each server itself; the fork server serves {server} only.
    with judge.fork_server() as fork_socket:
        verdicts = judge.judge_scenarios(argv, scenarios, jobs=args.jobs, timeout=args.timeout, fork_socket=fork_socket,
                                         http=args.http)  # fmt: skip
    if (line := judge.never_ran(verdicts)) is not None:
        print(f"intentref host: {line}", file=sys.stderr)
        return CANNOT_RUN_STATUS
    report = host_report(args.command, verdicts, args.level, time.monotonic() - started, args.era)
    if args.era == BOTH and report.run_info["era"] == "-":  # spec: D-CNF-071 -- no era spoken
        print("intentref host: the host made no tool call in either era", file=sys.stderr)
        return CANNOT_RUN_STATUS
    console.print_scenarios(report)
    if args.json_out:
        output.write_json(args.json_out, report_document(report))
    if args.junit:
        junit.write_junit(args.junit, report)
    if args.html:
        html.write_html(args.html, report)
    summary = markdown.summary(report)
    if args.markdown:
        markdown.write_markdown(args.markdown, summary)
    markdown.append_step_summary(summary)
    return FAIL_STATUS if report.tally[FAILED] else 0


def host_report(command: str, verdicts: Sequence[Any], level: str, seconds: float, era: str = "auto") -> Report:
    """The judge's verdicts as the suite's report: a row per scenario, its violations as lines and records."""
    from intentref.suite.cases.script import FAILED, PASSED, UNSUPPORTED
    from intentref.suite.host.judge import served_era, violation_line
    from intentref.suite.reports.model import Report, Row
    from intentref.suite.targets.options import BOTH

    # The era the host spoke, as the server saw its calls (D-CNF-066): "2026+legacy" when it spoke both,
    # "-" when it made no call at all.
    spoken = set().union(*(v.eras for v in verdicts))
    tagged = era == BOTH  # spec: D-CNF-070, D-CNF-071 -- an era the host never spoke in is unsupported
    unspoken = "the host made no tool call in this era in any scenario: it may speak only the other"

    def outcome(v: Any) -> str:
        return UNSUPPORTED if tagged and served_era(v.scenario) not in spoken else FAILED if v.failed(level) else PASSED

    rows = [Row(id=v.id, outcome=outcome(v), area="intentref host", level=v.scenario["level"],
                title=str(v.scenario["title"]), group="intentref.host", seconds=v.seconds,
                lines=tuple(violation_line(v, w, x) for w, x in v.violations),
                violations=tuple({"rule": x.rule, "level": x.level, "wording": w, "where": x.where, "message": x.message}
                                 for w, x in v.violations),
                requirements=tuple(v.scenario["requirements"]), decisions=tuple(v.scenario.get("decisions", [])),
                era=served_era(v.scenario) if tagged else "", detail=unspoken if outcome(v) == UNSUPPORTED else "")
            for v in verdicts]  # fmt: skip
    passed = sum(row.outcome == PASSED for row in rows)
    title = f"intentref host: {passed} of {len(rows)} scenarios pass at {level} level"
    run_info = {"command": command, "level": level, "seconds": round(seconds, 3),
                "era": "+".join(sorted(spoken)) or "-", "eraAsked": era}  # fmt: skip
    return Report("intentref host", title, run_info, rows, RULES_NOTE, failure_type="violation")


def report_document(report: Report) -> dict[str, Any]:
    """The host judge's JSON report."""
    from intentref.suite.cases.script import FAILED
    from intentref.suite.reports.model import by_era, counts

    return {
        "tool": report.name, "command": report.run_info["command"], "level": report.run_info["level"],
        "era": report.run_info.get("era", "-"), "eraAsked": report.run_info.get("eraAsked", "auto"),
        "seconds": round(report.seconds, 3), "summary": {"scenarios": len(report.rows), "failed": report.tally[FAILED],
                    **({"byEra": {era: counts(rows) for era, rows in eras.items()}} if (eras := by_era(report.rows)) else {})},
        "scenarios": [
            {"id": row.id, "title": row.title, "level": row.level, "requirements": list(row.requirements),
             "decisions": list(row.decisions), "status": row.outcome, "seconds": round(row.seconds, 3),
             "violations": list(row.violations), **({"era": row.era, "detail": row.detail} if row.era else {})}
            for row in report.rows
        ],
    }  # fmt: skip
