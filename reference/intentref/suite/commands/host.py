"""``intentref host``: judge a host of the protocol by what it does (issue 26).

    intentref host --command "my-host --server {server} --model {model} --request {request}"
                   [--scenario FILE ...] [--level normative|reference] [--json F] [--junit F] [--html F]
                   [--fuzz --seed N --count K [--out DIR]]

Exit status: 0 when every scenario passes at the chosen level, 1 when one fails, 2 for a
command-line mistake (reported in one line before anything runs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any, Final

USAGE_STATUS: Final = 2
FAIL_STATUS: Final = 1


def add_parser(sub: Any) -> None:
    p = sub.add_parser("host", help="judge a host (the program that calls the tools and runs a model) against seed 000's host rules",
                       description=__doc__.splitlines()[0] if __doc__ else None)  # fmt: skip
    p.add_argument("--command", required=True, metavar="COMMAND",
                   help="the host's command line with the placeholders {server}, {model} and {request}")  # fmt: skip
    p.add_argument("--http", action="store_true",
                   help="serve over streamable HTTP: the command takes {url} instead of {server}")  # fmt: skip
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
    from intentref.suite.host import judge
    from intentref.suite.reports.conformance import output_problem

    try:
        argv = judge.check_command(args.command, http=args.http)
        for flag, path in (("--json", args.json_out), ("--junit", args.junit), ("--html", args.html)):
            if path and (problem := output_problem(path)):
                raise judge.UsageProblem(f"{flag} {path}: {problem}")
        if args.timeout <= 0 or args.jobs < 1 or args.count < 1:
            raise judge.UsageProblem("--timeout, --jobs and --count must be positive")
        if args.fuzz:
            if args.scenario:
                raise judge.UsageProblem(
                    "--fuzz draws its own scenarios: give --scenario or --fuzz, not both"
                )
            out = pathlib.Path(args.out)
            if not out.is_dir():
                raise judge.UsageProblem(f"--out {args.out}: not a folder")
            from intentref.suite.host import fuzz

            return fuzz.run_fuzz(argv, seed=args.seed, count=args.count, out=out, level=args.level,
                                 timeout=args.timeout, jobs=args.jobs, http=args.http)  # fmt: skip
        paths = [pathlib.Path(p) for p in args.scenario] or judge.catalogue_paths()
        scenarios = judge.load_scenarios(paths)
    except judge.UsageProblem as problem:
        return _usage(str(problem))
    started = time.monotonic()
    # Over HTTP the judge starts each server itself; the fork server serves {server} only.
    with contextlib.nullcontext(None) if args.http else judge.fork_server() as fork_socket:
        verdicts = judge.judge_scenarios(argv, scenarios, jobs=args.jobs, timeout=args.timeout, fork_socket=fork_socket,
                                         http=args.http)  # fmt: skip
    seconds = time.monotonic() - started
    print_verdicts(verdicts, args.level, seconds)
    if args.json_out:
        write_json(args.json_out, args.command, verdicts, args.level, seconds)
    if args.junit:
        write_junit(args.junit, verdicts, args.level)
    if args.html:
        write_html(args.html, args.command, verdicts, args.level, seconds)
    return FAIL_STATUS if any(v.failed(args.level) for v in verdicts) else 0


def print_verdicts(verdicts: Sequence[Any], level: str, seconds: float) -> None:
    from intentref.suite.host.judge import violation_line

    for verdict in verdicts:
        status = "FAIL" if verdict.failed(level) else "pass"
        print(f"{status} {verdict.id} {verdict.scenario['title']} ({verdict.seconds:.1f} s)")
        for wording, violation in verdict.violations:
            print(f"  {violation_line(verdict, wording, violation)}")
    failed = sum(1 for v in verdicts if v.failed(level))
    print(f"{len(verdicts) - failed} of {len(verdicts)} scenarios pass at {level} level in {seconds:.1f} s")


def report_document(command: str, verdicts: Sequence[Any], level: str, seconds: float) -> dict[str, Any]:
    return {
        "tool": "intentref host",
        "command": command,
        "level": level,
        "seconds": round(seconds, 3),
        "summary": {"scenarios": len(verdicts), "failed": sum(1 for v in verdicts if v.failed(level))},
        "scenarios": [
            {
                "id": v.id,
                "title": v.scenario["title"],
                "level": v.scenario["level"],
                "requirements": v.scenario["requirements"],
                "decisions": v.scenario.get("decisions", []),
                "status": "failed" if v.failed(level) else "passed",
                "seconds": round(v.seconds, 3),
                "violations": [
                    {"rule": x.rule, "level": x.level, "wording": w, "where": x.where, "message": x.message}
                    for w, x in v.violations
                ],
            }
            for v in verdicts
        ],
    }


def write_json(path: str, command: str, verdicts: Sequence[Any], level: str, seconds: float) -> None:
    document = report_document(command, verdicts, level, seconds)
    pathlib.Path(path).write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", "utf-8")


def write_junit(path: str, verdicts: Sequence[Any], level: str) -> None:
    from intentref.suite.host.judge import violation_line
    from intentref.suite.reports.conformance import clean_text

    failed = [v for v in verdicts if v.failed(level)]
    suite = ET.Element("testsuite", name="intentref host", tests=str(len(verdicts)), failures=str(len(failed)),
                       errors="0", skipped="0", time=f"{sum(v.seconds for v in verdicts):.3f}")  # fmt: skip
    for verdict in verdicts:
        case = ET.SubElement(suite, "testcase", classname="intentref.host", name=clean_text(verdict.id),
                             time=f"{verdict.seconds:.3f}")  # fmt: skip
        if verdict.failed(level):
            lines = [violation_line(verdict, w, x) for w, x in verdict.violations]
            failure = ET.SubElement(case, "failure", message=clean_text(lines[0]))
            failure.text = clean_text("\n".join(lines))
    root = ET.Element("testsuites", name="intentref host")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


_HTML_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1b1b1b; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #ddd; }
.passed { color: #11691a; } .failed { color: #b00020; font-weight: 600; }
code, pre { font: 12px/1.4 ui-monospace, monospace; } pre { background: #f6f6f6; padding: .5rem; white-space: pre-wrap; }
"""


def html_page(command: str, verdicts: Sequence[Any], level: str, seconds: float) -> str:
    """One self-contained page: the run, a row per scenario, the violation lines of each failure."""
    from html import escape

    from intentref.suite.host.judge import violation_line

    failed = sum(1 for v in verdicts if v.failed(level))
    title = f"intentref host: {len(verdicts) - failed} of {len(verdicts)} scenarios pass at {level} level"
    rows = []
    details = []
    for verdict in verdicts:
        status = "failed" if verdict.failed(level) else "passed"
        rows.append(f'<tr><td><a href="#{escape(verdict.id)}">{escape(verdict.id)}</a></td>'
                    f"<td>{escape(str(verdict.scenario['title']))}</td><td class=\"{status}\">{status}</td>"
                    f"<td>{len(verdict.violations)}</td><td>{verdict.seconds:.1f} s</td></tr>")  # fmt: skip
        if verdict.violations:
            lines = "\n".join(violation_line(verdict, w, x) for w, x in verdict.violations)
            details.append(f'<h3 id="{escape(verdict.id)}">{escape(verdict.id)}</h3><pre>{escape(lines)}</pre>')
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{escape(title)}</title>\n'
        f"<style>{_HTML_STYLE}</style>\n</head>\n<body>\n<h1>{escape(title)}</h1>\n"
        f"<p>Host: <code>{escape(command)}</code> · {seconds:.1f} s · rules: seed 000's host rules "
        "(R-HST, normative), the contract (D-HST-001) and the reference host's choices (D-HST, reference).</p>\n"
        "<table><thead><tr><th>scenario</th><th>title</th><th>status</th><th>violations</th><th>time</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>\n<h2>Violations</h2>\n{''.join(details) or '<p>None.</p>'}\n"
        "</body>\n</html>\n"
    )


def write_html(path: str, command: str, verdicts: Sequence[Any], level: str, seconds: float) -> None:
    pathlib.Path(path).write_text(html_page(command, verdicts, level, seconds), "utf-8")
