"""intentref conformance: run the conformance suite against a target.

The target flags are every command's (``targets.options``): without one the bundled
reference server runs over real stdio, its era negotiated.  Cases go to ``--jobs`` worker
processes (default: the CPUs this process may use).  Exit statuses are ``EXIT_STATUSES``
(D-CNF-013).  Every mistake on the command line (an option, a file, a report path, a
selection of nothing) is found before any case runs.  Only argparse and the target flags
are imported here, so ``intentref --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from intentref.suite.targets.options import (
    add_cold_start_argument,
    add_target_arguments,
    era_specs,
    target_from,
)
from intentref.suite.targets.registry import DEFAULT_TIMEOUT
from intentref.suite.usage import UsageError, worker_count

if TYPE_CHECKING:  # imported where it is used: the command line starts without the runner
    from intentref.suite.targets.base import Target

# spec: D-CNF-013 -- one status per kind of outcome, so a CI script can tell them apart.
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_TARGET_UNUSABLE: Final = 3
EXIT_NOTHING_SELECTED: Final = 4
EXIT_STATUSES: Final = (
    (EXIT_OK, "every case passed or was unsupported (expected failures allowed, none stale)"),
    (EXIT_FAILED, "a case failed or errored, or an expected-failures entry is stale, or (--compare) a case regressed"),
    (EXIT_USAGE, "a usage error: an option, a file or a report path (found before any case runs)"),
    (EXIT_TARGET_UNUSABLE, "the target could not start, or does not serve the instances the cases use"),
    (EXIT_NOTHING_SELECTED, "the selection (--level, --only, --skip) selects no case"),
)


class NothingSelected(Exception):
    """The selection selects no case: exit status 4, so a mistyped pattern never passes in CI."""


def exit_status_text() -> str:
    """The exit statuses as the --help epilog lists them."""
    return "exit status:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_STATUSES)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = exit_status_text()
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keeps the epilog's lines
    add_target_arguments(p, both=True)
    add_cold_start_argument(p)
    p.add_argument("--smoke", action="store_true", help="with --harness: check the harness protocol only")

    chosen = p.add_argument_group("selection")
    chosen.add_argument("--level", choices=("normative", "all"), default="all", help="normative: only seed-required cases")
    chosen.add_argument("--only", action="append", default=[], metavar="PATTERN", help="case ids to run (fnmatch, repeatable)")
    chosen.add_argument("--skip", action="append", default=[], metavar="PATTERN", help="case ids to leave out (repeatable)")
    chosen.add_argument("--expected-failures", metavar="FILE", help="case ids expected to fail (JSON or text)")
    chosen.add_argument("--cases", metavar="DIR", help="fixture folder (default: the bundled conformance/cases)")
    chosen.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"longest wait for one answer (default {DEFAULT_TIMEOUT:g} s); longer is errored")  # fmt: skip
    chosen.add_argument("--jobs", type=worker_count, metavar="N",
                        help="worker processes (default: the CPUs this process may use)")  # fmt: skip
    chosen.add_argument("--isolate", action="store_true",
                        help="give every case a run of its own (a new server process over stdio); "
                             "by default cases that need no new Bridge share long-lived ones")  # fmt: skip

    out = p.add_argument_group("reports")
    out.add_argument("--json", dest="json_out", metavar="FILE", help="write the JSON report")
    out.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    out.add_argument("--html", metavar="FILE", help="write a self-contained HTML page")
    out.add_argument("--trace", action="store_true",
                     help="keep the messages each failed or errored case exchanged, with timings, "
                          "in the JSON and HTML reports (D-CNF-064)")  # fmt: skip
    chosen.add_argument("--repeat", type=worker_count, default=1, metavar="N",
                        help="run the selection N times; a case whose outcome changes is reported "
                             "flaky and fails the run when one of its runs failed (D-CNF-065)")  # fmt: skip
    out.add_argument("--markdown", metavar="FILE",
                     help="write a short Markdown summary (also appended to $GITHUB_STEP_SUMMARY when it is set)")
    out.add_argument("--compare", metavar="OLD.json",
                     help="list what changed since this earlier JSON report; a regression fails the run (D-CNF-060)")

    p.add_argument("--write-mjs", action="store_true", help="maintenance: regenerate conformance/instances.mjs")
    p.add_argument("--check", action="store_true", help="with --write-mjs: exit 1 if instances.mjs is stale")
    p.set_defaults(run=run)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="intentref conformance", description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed usage (2) or --help (0)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    return run(args)


# --------------------------------------------------------------------------- instances.mjs


def instances_mjs() -> str:
    """``conformance/instances.mjs``: instances.json as the default export the JavaScript CLI loads."""
    from intentref.suite.targets.base import load_instances

    body = json.dumps({"instances": load_instances()}, ensure_ascii=False, indent=2)
    return (
        "// Generated from instances.json by `intentref conformance --write-mjs`; do not edit.\n"
        "// The configuration `intent-runtime-mcp --config instances.mjs` loads.\n"
        f"export default {body};\n"
    )


def _write_mjs(check: bool) -> int:
    from intentref._paths import data_dir

    path = data_dir("conformance") / "instances.mjs"
    text = instances_mjs()
    if check:
        if not path.exists() or path.read_text("utf-8") != text:
            print(f"{path} is stale: run `intentref conformance --write-mjs`", file=sys.stderr)
            return EXIT_FAILED
        return EXIT_OK
    path.write_text(text, "utf-8")
    print(f"wrote {path}")
    return EXIT_OK


# --------------------------------------------------------------------------- a run


def run(args: argparse.Namespace) -> int:
    if args.write_mjs:
        return _write_mjs(args.check)
    if args.check:
        print("intentref conformance: --check goes with --write-mjs", file=sys.stderr)
        return EXIT_USAGE
    if args.smoke:
        if not args.harness:
            print("intentref conformance: --smoke checks a harness: give --harness COMMAND", file=sys.stderr)
            return EXIT_USAGE
        from intentref.suite.targets.harness import smoke

        return EXIT_OK if smoke(args.harness, args.timeout) else EXIT_FAILED
    from intentref.suite.targets.base import TargetCannotStart

    statuses = {UsageError: EXIT_USAGE, NothingSelected: EXIT_NOTHING_SELECTED,
                TargetCannotStart: EXIT_TARGET_UNUSABLE, MissingInstances: EXIT_TARGET_UNUSABLE}  # fmt: skip
    try:
        return _run(args)
    except tuple(statuses) as exc:
        cannot_start = "the target could not start: " if isinstance(exc, TargetCannotStart) else ""
        print(f"intentref conformance: {cannot_start}{exc}", file=sys.stderr)
        return next(status for kind, status in statuses.items() if isinstance(exc, kind))


_REPORT_NAMES: Final = {"--json": "JSON", "--junit": "JUnit XML", "--html": "HTML", "--markdown": "Markdown"}


class MissingInstances(Exception):
    """A server configured elsewhere lacks instances the selected cases use: exit status 3."""


def _report_paths(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(flag, path, writer) of every report asked for, each path checked before the run (D-CNF-013)."""
    from intentref.suite.reports.output import output_problem

    wanted = [("--json", args.json_out, "write_json"), ("--junit", args.junit, "write_junit"),
              ("--html", args.html, "write_html"), ("--markdown", args.markdown, "write_markdown")]  # fmt: skip
    chosen = [(flag, path, writer) for flag, path, writer in wanted if path]
    seen: dict[str, str] = {}
    for flag, path, _ in chosen:
        problem = output_problem(path)
        if problem is not None:
            raise UsageError(f"{flag} {path}: {problem}")
        resolved = str(Path(path).resolve())
        if resolved in seen:
            raise UsageError(f"{seen[resolved]} and {flag} both write {path}")
        seen[resolved] = flag
    return chosen


def _selected(args: argparse.Namespace) -> list[Any]:
    from intentref.suite.cases.fixtures import load_cases, select

    try:
        every = load_cases(Path(args.cases) if args.cases else None)
    except ValueError as exc:  # a fixture file that does not satisfy fixture.schema.json
        raise UsageError(str(exc)) from None
    cases = select(every, args.level, args.only, args.skip)
    if not cases:
        asked = [f"--level {args.level}", *(f"--only {p}" for p in args.only), *(f"--skip {p}" for p in args.skip)]
        areas = ", ".join(sorted({case.area for case in every})) or "none"
        raise NothingSelected(f"{' '.join(asked)} selects none of the {len(every)} cases "
                              f"(case ids are an area and a number, e.g. BRG-0001; areas: {areas})")  # fmt: skip
    return cases


def _check_instances(target: Target, cases: list[Any]) -> None:
    """A server configured elsewhere must serve the instances the cases use; say which it lacks."""
    if not target.configured_elsewhere:
        return
    from intentref.suite.targets.base import load_instances
    from intentref.suite.targets.preflight import missing_instances

    suite = load_instances()
    used = sorted({name for case in cases if "setup" not in case.data
                   for name in case.data.get("instances", []) if name in suite})  # fmt: skip
    missing = missing_instances(target, used)
    if missing:
        raise MissingInstances(
            f"{target.name} does not serve the instance(s) {', '.join(missing)} that the "
            "selected cases use; start it with the suite's instances: "
            "intent-runtime-mcp --config conformance/instances.json --http 127.0.0.1:8765"
        )


def _run(args: argparse.Namespace) -> int:
    from intentref.suite.cases import baseline
    from intentref.suite.execution import workers
    from intentref.suite.targets import registry
    from intentref.suite.targets.base import TargetCannotStart

    listed: dict[str, str] = {}
    if args.expected_failures:
        try:
            listed = baseline.load(args.expected_failures)
        except baseline.BaselineError as exc:
            raise UsageError(str(exc)) from None
    if args.cases and not Path(args.cases).is_dir():
        raise UsageError(f"--cases {args.cases}: not a folder")
    report_paths = _report_paths(args)
    baseline_report = _baseline_report(args.compare)
    spec = target_from(args, args.timeout, args.cold_start)  # every mistake in it, now
    problem = registry.program_problem(spec)
    if problem is not None:
        raise TargetCannotStart(problem)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    # The selection before the target: a selection of nothing is a mistake found in the
    # time it takes to read the fixtures, with no server started and stopped for it.
    cases = _selected(args)
    jobs = args.jobs or workers.default_jobs()
    console = _console()
    first_done: list[float] = []
    from intentref.suite.targets import recording

    tracing_before = recording.enabled()
    recording.enable(args.trace or tracing_before)  # spec: D-CNF-064, seen by the workers too
    try:
        specs = era_specs(spec, args.era)
        judged = [_judge_era(args, era_spec, cases, jobs, console, first_done, len(specs) > 1) for era_spec in specs]
    finally:
        recording.enable(tracing_before)
    ended = time.perf_counter()
    spoken = [era for era in judged if not era.refused]
    if not spoken:
        raise TargetCannotStart(judged[0].refused)  # spec: D-CNF-071 -- no era spoken: one line, as D-CNF-052
    order = {case.id: index for index, case in enumerate(cases)}
    # Each case's eras next to each other, in case order (D-CNF-070); sorted() keeps the eras' order.
    outcomes = sorted((o for era in judged for o in era.outcomes), key=lambda o: order.get(o.case_id, len(order)))
    run_info = _run_info(args, spoken[0].spec, spoken[0].work, started_at, ended - started, len(cases), jobs)
    if len(judged) > 1:  # spec: D-CNF-070
        run_info["era"] = "+".join(era.spec.era for era in spoken)
        run_info["eras"] = {era.spec.era: era.facts() for era in judged}
    if args.repeat > 1:
        run_info["repeat"] = args.repeat
    if findings := spoken[0].findings:
        run_info["findings"] = findings
    _print_summary(console, run_info, cases, outcomes, args.cases)
    regressed = _write_reports(report_paths, baseline_report, run_info, cases, outcomes)
    if first_done and len(outcomes) > 1:
        # Start-up (a server, an interpreter, the first run) is paid once; the rate that
        # matters for a long suite is the one after it.
        rate = (len(outcomes) * args.repeat - 1) / max(ended - first_done[0], 1e-9)
        print(f"{len(outcomes)} cases in {ended - started:.1f} s; {rate:.0f} cases/s after start-up "
              f"({first_done[0] - started:.1f} s), {jobs} worker process{'es' if jobs != 1 else ''}")  # fmt: skip
    verdict = baseline.judge(outcomes, listed)
    if listed:
        print(f"expected failures: {len(verdict.expected)} still failing, {len(verdict.stale)} stale, "
              f"{len(verdict.not_run)} not run")  # fmt: skip
        for case_id in verdict.stale:
            print(f"  stale: {case_id} passes now; remove it from {args.expected_failures}")
    return EXIT_OK if verdict.ok and not regressed else EXIT_FAILED


@dataclass
class EraRun:
    """One era's part of a run: all of it in a run of one era."""

    spec: Any
    outcomes: list[Any]
    work: Any = None
    findings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    refused: str = ""  # spec: D-CNF-071 -- why the server does not speak this era, in one line

    def facts(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), **({"refused": self.refused} if self.refused else {})}


def _judge_era(args: argparse.Namespace, spec: Any, cases: list[Any], jobs: int, console: Any,
               first_done: list[float], tagged: bool) -> EraRun:  # fmt: skip
    """The cases in ``spec``'s era, each --repeat a full run (D-CNF-065); ``tagged`` (one of two eras):
    each outcome says its era, and an era the server does not speak leaves every case unsupported."""
    from intentref.suite.cases.script import UNSUPPORTED, CaseOutcome
    from intentref.suite.execution import workers
    from intentref.suite.execution.runner import merge_repetitions
    from intentref.suite.targets.preflight import era_refusal

    started = time.perf_counter()
    if tagged and (refusal := era_refusal(spec)):
        refused = [CaseOutcome(case.id, UNSUPPORTED, detail=refusal, era=spec.era) for case in cases]
        return EraRun(spec, refused, seconds=time.perf_counter() - started, refused=refusal)
    spec, findings = _checked(spec, cases)
    for finding in findings:
        print(f"note: {finding}")
    repetitions = []
    for repetition in range(args.repeat):  # spec: D-CNF-065 -- each a full run, as without --repeat
        name = _repetition_name(repetition, args.repeat) + (f", era {spec.era}" if tagged else "")
        with _progress(console, cases, name) as advance:

            def on_outcome(case: Any, outcome: Any) -> None:
                if not first_done:
                    first_done.append(time.perf_counter())
                advance(case, outcome)

            done, work = workers.execute(cases, spec, jobs=jobs, isolate=args.isolate, on_outcome=on_outcome)
        repetitions.append(done)
    outcomes = merge_repetitions(repetitions)
    for outcome in outcomes if tagged else ():
        outcome.era = spec.era
    return EraRun(spec, outcomes, work, findings, time.perf_counter() - started)


def _baseline_report(path: str | None) -> dict[str, Any] | None:
    """The --compare report, read before the run: a file that is not a report is a usage error (D-CNF-013)."""
    if not path:
        return None
    from intentref.suite.reports import changes

    try:
        return changes.load(path)
    except changes.NotAReport as exc:
        raise UsageError(f"--compare {exc}") from None


def _write_reports(report_paths: list[tuple[str, str, str]], baseline_report: dict[str, Any] | None,
                   run_info: dict[str, Any], cases: list[Any], outcomes: list[Any]) -> bool:  # fmt: skip
    """Every report asked for, the summary appended to $GITHUB_STEP_SUMMARY; whether a case regressed."""
    from intentref.suite.reports import changes, markdown, model
    from intentref.suite.reports import conformance as reports

    report = model.conformance(run_info, cases, outcomes)
    found = None
    if baseline_report is not None:
        found = changes.between(baseline_report, reports.report_document(report))
        print("\n".join(found.lines()))
    summary = markdown.summary(report, found.markdown() if found is not None else ())
    for flag, path, writer in report_paths:
        if writer == "write_markdown":
            markdown.write_markdown(path, summary)
        else:
            getattr(reports, writer)(path, run_info, cases, outcomes)
        print(f"{_REPORT_NAMES[flag]} report written to {path}")
    if (summary_path := markdown.append_step_summary(summary)) is not None:
        print(f"Markdown summary appended to {summary_path}")
    return bool(found is not None and found.regressions)


def _checked(spec: Any, cases: list[Any]) -> tuple[Any, list[str]]:
    """A server configured elsewhere: its era negotiated once, the instances the cases use served.

    Asked here, before any worker starts, so a server that cannot serve the run stops it with
    one line (D-CNF-013, D-CNF-052); with what the runner learnt of it on the way (findings,
    D-CNF-056).
    """
    from intentref.suite.targets.base import TargetCannotStart

    if not spec.declared.configured_elsewhere:
        return spec, []
    target = spec.build()
    try:
        if not target.configured_elsewhere:
            return spec, []
        from dataclasses import replace

        try:
            if spec.era == "auto":
                negotiated = target.negotiate()
                if negotiated is not None:
                    spec = replace(spec, era=negotiated)  # the workers need not ask again
            _check_instances(target, cases)
        except RuntimeError as exc:
            # Its first connection failed in a way no case caused (an HTTP refusal of the
            # handshake, a broken reply): no case can run, so it is one line and status 3.
            raise TargetCannotStart(str(exc)) from None
        return spec, target.findings()
    finally:
        target.close()


def _run_info(args: argparse.Namespace, spec: Any, work: Any, started_at: datetime, seconds: float,
              count: int, jobs: int) -> dict[str, Any]:  # fmt: skip
    from intentref import __version__

    return {
        "target": work.name or spec.text,
        "transport": work.transport,
        "era": (work.era or spec.era) if work.transport == "mcp" else "-",  # only MCP has eras
        "eraAsked": args.era if work.transport == "mcp" else "-",  # auto: the era above was negotiated
        "started": started_at.isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "python": platform.python_version(),
        "intentref version": __version__,
        "jobs": jobs,
        "isolate": bool(args.isolate),
        "selection": {
            "level": args.level,
            "only": list(args.only),
            "skip": list(args.skip),
            "cases": count,
            "expectedFailures": args.expected_failures,
        },
    }


# --------------------------------------------------------------------------- presentation


def _console() -> Any:
    try:
        from rich.console import Console
    except ImportError:  # pragma: no cover - rich is a dependency
        return None
    return Console()


def _repetition_name(repetition: int, repeat: int) -> str:
    return "conformance" if repeat == 1 else f"conformance, run {repetition + 1} of {repeat}"


@contextlib.contextmanager
def _progress(console: Any, cases: list[Any], description: str = "conformance") -> Any:
    from intentref.suite.reports.console import LiveProgress

    with LiveProgress(console, len(cases), description, cases=cases) as progress:
        yield progress.advance


def _print_summary(console: Any, run_info: dict[str, Any], cases: list[Any], outcomes: list[Any],
                   folder: str | None) -> None:  # fmt: skip
    from intentref.suite.reports.conformance import print_summary
    from intentref.suite.reports.model import area_titles

    print_summary(console, run_info, cases, outcomes, area_titles(folder))
