"""``intentref matrix``: many implementations through the suite in one run, side by side.

Every target runs the same selection of cases.  The run produces one self-contained HTML
page (rows: the cases by level and area; columns: the implementations), a JSON report that
validates against ``conformance/matrix.schema.json``, and one SVG badge per implementation.

A target that cannot start, crashes or hangs is one column of ``errored`` with its reason;
the others complete.  The whole run has a time limit: when it runs out, every case a target
has not answered is ``errored`` with that reason and the target is released (D-CNF-041).

The default set of implementations (no ``--target``): the bundled reference over stdio and
over HTTP, every decision variant, all of them combined, and every faulty implementation
the suite ships.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from intentref.suite.cases import baseline
from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
from intentref.suite.reports.model import LEVELS, Row, case_row, counts, labelled, of_level
from intentref.suite.targets.options import BOTH, add_header_argument, era_specs, request_headers
from intentref.suite.targets.registry import DEFAULT_TIMEOUT, ERAS, described
from intentref.suite.usage import UsageError

MATRIX_FORMAT: Final = "intentref-matrix/1"
# The whole run stops after this many seconds unless told otherwise: the default set takes
# about a minute on two CPUs, and a CI job should learn of a hanging target in minutes.
DEFAULT_TIME_LIMIT_S: Final = 600.0
# The seed order flow (seed 000, #完整 Bridge 流程) is timed this many times on a warm run;
# the median of the repeats after the first is reported.
FLOW_REPEATS: Final = 7
SEED_FLOW_CASE: Final = "BRG-0001"
GROUPS: Final = ("reference", "variants", "faulty")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass
class Implementation:
    """One column: a named target spec, and what happened when it ran."""

    name: str
    spec: str
    kind: str  # reference, variant, faulty or user
    era: str = "auto"
    expected_failures: str | None = None
    era_negotiated: str = "-"  # what its run spoke (D-CNF-066); "-": not MCP, or it never ran
    era_column: bool = False  # one of its two columns of --era both (D-CNF-070)
    outcomes: dict[str, CaseOutcome] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    flow_ms: float | None = None


def default_implementations(groups: Sequence[str] = GROUPS) -> list[Implementation]:
    from intentref.suite.alterations import faulty, variants

    found: list[Implementation] = []
    if "reference" in groups:
        found.append(Implementation("reference (stdio)", "reference", "reference"))
        found.append(Implementation("reference (HTTP)", "http-reference", "reference"))
    if "variants" in groups:
        found += [Implementation(f"variant {name}", f"variant:{name}", "variant") for name in variants.catalogue()]
        found.append(Implementation("variant all", "variant:all", "variant"))
    if "faulty" in groups:
        found += [Implementation(f"faulty {name}", f"faulty:{name}", "faulty") for name in faulty.FAULTS]
    return found


def read_targets_file(path: str) -> list[Implementation]:
    """``{"targets": [{"name", "spec", "era"?, "expectedFailures"?}]}``; faults are UsageError."""
    try:
        document = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--targets {path}: {exc}") from None
    targets = document.get("targets") if isinstance(document, dict) else None
    if not isinstance(targets, list) or not targets:
        raise UsageError(f"--targets {path}: expected {{\"targets\": [{{\"name\", \"spec\"}}, ...]}}")
    found = []
    for index, entry in enumerate(targets):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("spec"), str):
            raise UsageError(f"--targets {path}: /targets/{index} needs string members name and spec")
        era = entry.get("era", "auto")
        if era not in (*ERAS, BOTH):
            raise UsageError(f"--targets {path}: /targets/{index}/era must be one of {', '.join((*ERAS, BOTH))}")
        found.append(Implementation(entry["name"], entry["spec"], "user", era, entry.get("expectedFailures")))
    return found


def parse_target_option(text: str, era: str = "auto") -> Implementation:
    """``--target NAME=SPEC``: SPEC is read by the registry, as every command's (``registry.parse``)."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise UsageError(f"--target {text!r}: write NAME=SPEC, e.g. mine=stdio:my-server --config {{config}}")
    return Implementation(name.strip(), spec.strip(), "user", era)


def columns_per_era(impls: Sequence[Implementation]) -> list[Implementation]:
    """spec: D-CNF-070 -- an implementation asked in both eras is two columns side by side,
    ``NAME [2026]`` and ``NAME [legacy]``; one without eras (not MCP) stays one column."""
    from intentref.suite.targets import registry

    found = []
    for impl in impls:
        eras = ["auto"]
        if impl.era == BOTH:
            with contextlib.suppress(UsageError):  # a spec with a mistake is its column's error, later
                eras = [spec.era for spec in era_specs(registry.parse(impl.spec, "auto"), BOTH)]
        two = len(eras) > 1
        found += [replace(impl, name=labelled(impl.name, era) if two else impl.name, era=era, era_column=two)
                  for era in eras] if impl.era == BOTH else [impl]  # fmt: skip
    return found


# --------------------------------------------------------------------------- running


def _spec_or_error(impl: Implementation, timeout: float, headers: tuple[tuple[str, str], ...] = ()) -> Any:
    """The implementation's parsed spec, or None with its column's error set (D-CNF-041)."""
    from intentref.suite.targets import registry

    try:
        spec = replace(registry.parse(impl.spec, impl.era, timeout), headers=headers)
    except UsageError as exc:
        impl.error = f"could not start: {exc}"
        return None
    problem = registry.program_problem(spec)
    if problem is not None:
        impl.error = f"could not start: {problem}"
        return None
    return spec


def _time_seed_flow(target: Any, case: Case) -> float | None:
    from intentref.suite.execution.runner import Executor

    executor = Executor(target)
    try:
        times = []
        for _ in range(FLOW_REPEATS):
            outcome = executor.run(case)
            if outcome.outcome != PASSED:
                return None
            times.append(outcome.seconds)
        return statistics.median(times[1:]) * 1000
    finally:
        executor.close()


def run_matrix(impls: list[Implementation], cases: list[Case], *, time_limit: float = DEFAULT_TIME_LIMIT_S,
               timeout: float = 10.0, jobs: int | None = None, headers: tuple[tuple[str, str], ...] = (),
               progress: Callable[[Implementation], None] | None = None) -> float:  # fmt: skip
    """Run every implementation over ``cases``; the wall seconds taken.

    The cases of all implementations go into one pool of units of work over ``jobs`` worker
    processes (D-CNF-054), so no single implementation sets the run's length; each keeps its
    own time (the seconds a worker spent with any of its units running, ``workers.Work.seconds``).
    ``headers`` go to every ``http:`` target (D-CNF-067); one that refuses them is its column's error.
    """
    from intentref.suite.execution import workers
    from intentref.suite.targets.preflight import era_refusal

    jobs = jobs or workers.default_jobs()
    started = time.perf_counter()
    deadline = time.monotonic() + time_limit
    works: list[workers.Work] = []
    by_key: dict[str, Implementation] = {}
    for number, impl in enumerate(impls):
        spec = _spec_or_error(impl, timeout, headers)
        if spec is None:
            continue
        if impl.era_column and (refusal := era_refusal(spec)):  # spec: D-CNF-071
            impl.outcomes = {case.id: CaseOutcome(case.id, UNSUPPORTED, detail=refusal) for case in cases}
            continue
        work = workers.Work(str(number), spec, list(cases))
        try:
            workers.plan_work([work])
        except Exception as exc:  # a target that cannot even be built: its whole column
            impl.error = f"could not start: {exc}"
            continue
        works.append(work)
        by_key[work.key] = impl

    def heard(work: workers.Work, index: int, outcome: CaseOutcome) -> None:
        impl = by_key[work.key]
        impl.outcomes[cases[index].id] = outcome
        if progress is not None and len(impl.outcomes) == len(cases):
            impl.seconds = work.seconds
            progress(impl)

    reason = f"the matrix's time limit ({time_limit:g} s) ran out before this case was answered"
    with workers.shared_resources(works):
        workers.run_works(works, jobs, heard, stop_on_cannot_start=False, deadline=deadline, deadline_reason=reason)
        flow = next((c for c in cases if c.id == SEED_FLOW_CASE), None)
        for work in works:
            impl = by_key[work.key]
            impl.seconds = work.seconds
            impl.era_negotiated = work.era or "-"
            if work.error is not None:
                impl.error = f"could not start: {work.error}"
            elif flow is not None and time.monotonic() < deadline:
                _time_flow_of(impl, work, flow)
    for impl in impls:
        if impl.error is None and len(impl.outcomes) < len(cases):
            for case in cases:
                impl.outcomes.setdefault(case.id, CaseOutcome(case.id, ERRORED, detail=reason))
    return time.perf_counter() - started


def _time_flow_of(impl: Implementation, work: Any, flow: Case) -> None:
    target = work.spec.build()
    try:
        impl.flow_ms = _time_seed_flow(target, flow)
    except Exception:  # the timing is a figure of the report, never a verdict
        impl.flow_ms = None
    finally:
        with contextlib.suppress(Exception):
            target.close()


# --------------------------------------------------------------------------- the report


def _outcome(impl: Implementation, case: Case) -> CaseOutcome:
    if impl.error is not None:
        return CaseOutcome(case.id, ERRORED, detail=impl.error)
    return impl.outcomes.get(case.id) or CaseOutcome(case.id, ERRORED, detail="not run")


def _rate(rows: list[Row]) -> float | None:
    # Of the cases the implementation could be asked: unsupported ones are not held against it.
    ran = [r for r in rows if r.outcome != UNSUPPORTED]
    return round(counts(ran)[PASSED] / len(ran), 4) if ran else None


def _expected_failures(impl: Implementation, rows: list[Row]) -> dict[str, Any] | None:
    if not impl.expected_failures:
        return None
    listed = baseline.load(impl.expected_failures)
    failing = {r.id for r in rows if r.outcome in (FAILED, ERRORED)}
    return {"listed": len(listed), "unexpectedFailures": sorted(failing - set(listed)),
            "stale": sorted(set(listed) - failing)}  # fmt: skip


def _summary(impl: Implementation, rows: list[Row]) -> dict[str, Any]:
    normative, reference = (of_level(rows, level) for level in LEVELS)
    reasons = Counter(r.detail for r in rows if r.outcome == UNSUPPORTED)
    return {
        "normative": {"total": len(normative), **counts(normative)},
        "reference": {"total": len(reference), **counts(reference)},
        "normativePassRate": _rate(normative),
        "referenceAgreement": _rate(reference),
        "unsupportedReasons": dict(reasons.most_common()),
        "seedFlowMedianMs": None if impl.flow_ms is None else round(impl.flow_ms, 3),
        "seconds": round(impl.seconds, 3),
        "error": impl.error,
        "expectedFailures": _expected_failures(impl, rows),
    }


def _result(row: Row) -> dict[str, Any]:
    return {"outcome": row.outcome, "detail": row.detail, "mismatches": list(row.lines), "failedStep": row.failed_step}


def document(impls: list[Implementation], cases: list[Case], wall: float, time_limit: float) -> dict[str, Any]:
    # Each implementation's column as the report's rows: what it answered, or why it could not (D-CNF-041).
    columns = {impl.name: [case_row(case, _outcome(impl, case)) for case in cases] for impl in impls}
    entries = []
    disagreements = []
    for index, case in enumerate(cases):
        results = {name: _result(rows[index]) for name, rows in columns.items()}
        if len({r["outcome"] for r in results.values() if r["outcome"] in (PASSED, FAILED)}) > 1:
            disagreements.append(case.id)
        entries.append({"id": case.id, "area": case.area, "file": case.file, "level": case.level,
                        "decisions": list(case.data.get("decisions", [])), "description": case.data.get("description", ""),
                        "results": results})  # fmt: skip
    caught = {impl.name: [r.id for r in columns[impl.name] if r.level == "normative" and r.outcome == FAILED]
              for impl in impls if impl.kind == "faulty"}  # fmt: skip
    return {
        "format": MATRIX_FORMAT,
        "generatedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "wallSeconds": round(wall, 3),
        "timeLimitSeconds": time_limit,
        "implementations": [
            {"name": i.name, "spec": i.spec, "kind": i.kind, "era": i.era, "eraNegotiated": i.era_negotiated,
             "summary": _summary(i, columns[i.name])}
            for i in impls
        ],
        "cases": entries,
        "disagreements": disagreements,
        "caughtBy": caught,
    }


def matrix_schema() -> dict[str, Any]:
    from intentref._paths import data_dir

    schema: dict[str, Any] = json.loads((data_dir("conformance") / "matrix.schema.json").read_text("utf-8"))
    return schema


# --------------------------------------------------------------------------- the command


def add_parser(sub: Any) -> None:
    p = sub.add_parser("matrix", help="run many implementations through the suite; one side-by-side report",
                       description=(__doc__ or "").splitlines()[0])  # fmt: skip
    p.add_argument("--target", action="append", default=[], metavar="NAME=SPEC",
                   help=f"an implementation (repeatable); SPEC as for `intentref conformance --target`: "
                        f"{described()}")  # fmt: skip
    p.add_argument("--era", choices=(*ERAS, BOTH), default="auto",
                   help="MCP era of the --target implementations: auto (negotiated, default), 2026, legacy or "
                        "both (a column per era, D-CNF-070)")  # fmt: skip
    p.add_argument("--targets", metavar="FILE", help='a JSON file {"targets": [{"name", "spec", "era"?, "expectedFailures"?}]}')
    p.add_argument("--include", action="append", default=[], choices=GROUPS,
                   help="add a bundled group (default when no target is given: all three)")  # fmt: skip
    p.add_argument("--out", default="matrix", metavar="DIR", help="folder for matrix.html, matrix.json, badges/ (default: matrix)")
    p.add_argument("--markdown", metavar="FILE",
                   help="write a Markdown summary, a row per implementation (also appended to $GITHUB_STEP_SUMMARY)")
    p.add_argument("--level", choices=("normative", "all"), default="all")
    p.add_argument("--only", action="append", default=[], metavar="PATTERN", help="case ids to run (fnmatch)")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S, metavar="S", help="for the whole run")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S", help="for each answer of a target")
    p.add_argument("--jobs", type=int, default=0, metavar="N", help="worker processes (default: the CPUs this process may use)")
    add_header_argument(p)
    p.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except UsageError as exc:
        print(f"intentref matrix: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _main(args: argparse.Namespace) -> int:
    from intentref.suite.cases.fixtures import load_cases, select
    from intentref.suite.reports import badges, html, markdown, output

    impls = [parse_target_option(t, args.era) for t in args.target]
    if args.targets:
        impls += read_targets_file(args.targets)
    groups = args.include or ([] if impls else list(GROUPS))
    impls = columns_per_era(impls) + default_implementations(groups)
    if len({i.name for i in impls}) != len(impls):
        raise UsageError("two implementations have the same name")
    for impl in impls:
        if impl.expected_failures and not Path(impl.expected_failures).is_file():
            raise UsageError(f"{impl.name}: expected-failures file {impl.expected_failures} does not exist")
    if args.time_limit <= 0 or args.timeout <= 0:
        raise UsageError("--time-limit and --timeout must be positive")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if not out.resolve().parent.is_dir():
        raise UsageError(f"--out {out}: its parent folder does not exist")
    if args.markdown and (problem := output.output_problem(args.markdown)):
        raise UsageError(f"--markdown {args.markdown}: {problem}")
    headers = request_headers(args.header)
    cases = select(load_cases(), args.level, args.only, [])
    if not cases:
        raise UsageError("the selection holds no case")
    print(f"intentref matrix: {len(impls)} implementations × {len(cases)} cases", file=sys.stderr)

    def progress(impl: Implementation) -> None:
        state = impl.error or f"{sum(o.outcome == PASSED for o in impl.outcomes.values())} passed"
        print(f"  {impl.name}: {state} ({impl.seconds:.1f} s)", file=sys.stderr, flush=True)

    wall = run_matrix(impls, cases, time_limit=args.time_limit, timeout=args.timeout, jobs=args.jobs or None,
                      headers=headers, progress=progress)  # fmt: skip
    doc = document(impls, cases, wall, args.time_limit)
    out.mkdir(exist_ok=True)
    (out / "badges").mkdir(exist_ok=True)
    output.write_json(out / "matrix.json", doc, indent=1)
    output.write_text(out / "matrix.html", html.matrix_page(doc))
    for impl in doc["implementations"]:
        name = badges.file_name(impl["name"])
        output.write_text(out / "badges" / f"{name}.svg", badges.badge_for(impl["summary"]))
    summary = markdown.matrix_summary(doc)
    if args.markdown:
        markdown.write_markdown(args.markdown, summary)
    markdown.append_step_summary(summary)
    for impl in doc["implementations"]:
        s = impl["summary"]
        n = s["normative"]
        print(f"{impl['name']}: normative {n['passed']}/{n['total'] - n['unsupported']}"
              f"{'' if not s['error'] else '  (' + s['error'] + ')'}")  # fmt: skip
    print(f"wrote {out / 'matrix.html'}, {out / 'matrix.json'} and {len(impls)} badges in {out / 'badges'} "
          f"({wall:.1f} s)")  # fmt: skip
    return EXIT_OK
