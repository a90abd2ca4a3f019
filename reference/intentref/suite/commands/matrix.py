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
import html
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from intentref.suite.cases.fixtures import Case
from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED, CaseOutcome
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
        if era not in ERAS:
            raise UsageError(f"--targets {path}: /targets/{index}/era must be one of {', '.join(ERAS)}")
        found.append(Implementation(entry["name"], entry["spec"], "user", era, entry.get("expectedFailures")))
    return found


def parse_target_option(text: str, era: str = "auto") -> Implementation:
    """``--target NAME=SPEC``: SPEC is read by the registry, as every command's (``registry.parse``)."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise UsageError(f"--target {text!r}: write NAME=SPEC, e.g. mine=stdio:my-server --config {{config}}")
    return Implementation(name.strip(), spec.strip(), "user", era)


# --------------------------------------------------------------------------- running


def _spec_or_error(impl: Implementation, timeout: float) -> Any:
    """The implementation's parsed spec, or None with its column's error set (D-CNF-041)."""
    from intentref.suite.targets import registry

    try:
        spec = registry.parse(impl.spec, impl.era, timeout)
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
               timeout: float = 10.0, jobs: int | None = None,
               progress: Callable[[Implementation], None] | None = None) -> float:  # fmt: skip
    """Run every implementation over ``cases``; the wall seconds taken.

    The cases of all implementations go into one pool of units of work over ``jobs`` worker
    processes (D-CNF-054), so no single implementation sets the run's length; each keeps its
    own time (the seconds a worker spent with any of its units running, ``workers.Work.seconds``).
    """
    from intentref.suite.execution import workers

    jobs = jobs or workers.default_jobs()
    started = time.perf_counter()
    deadline = time.monotonic() + time_limit
    works: list[workers.Work] = []
    by_key: dict[str, Implementation] = {}
    for number, impl in enumerate(impls):
        spec = _spec_or_error(impl, timeout)
        if spec is None:
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


def _summary(impl: Implementation, cases: list[Case]) -> dict[str, Any]:
    from intentref.suite.cases import baseline

    by_level: dict[str, Counter[str]] = {"normative": Counter(), "reference": Counter()}
    reasons: Counter[str] = Counter()
    for case in cases:
        outcome = _outcome(impl, case)
        by_level[case.level][outcome.outcome] += 1
        if outcome.outcome == UNSUPPORTED:
            reasons[outcome.detail] += 1
    normative, reference = by_level["normative"], by_level["reference"]
    n_total, r_total = sum(normative.values()), sum(reference.values())
    n_ran, r_ran = n_total - normative[UNSUPPORTED], r_total - reference[UNSUPPORTED]
    expected: dict[str, Any] | None = None
    if impl.expected_failures:
        listed = baseline.load(impl.expected_failures)
        failing = {c.id for c in cases if _outcome(impl, c).outcome in (FAILED, ERRORED)}
        expected = {"listed": len(listed), "unexpectedFailures": sorted(failing - set(listed)),
                    "stale": sorted(set(listed) - failing)}  # fmt: skip

    def level(counts: Counter[str], total: int) -> dict[str, int]:
        return {"total": total, **{name: counts[name] for name in (PASSED, FAILED, UNSUPPORTED, ERRORED)}}

    return {
        "normative": level(normative, n_total),
        "reference": level(reference, r_total),
        # Of the cases the implementation could be asked: unsupported ones are not held against it.
        "normativePassRate": round(normative[PASSED] / n_ran, 4) if n_ran else None,
        "referenceAgreement": round(reference[PASSED] / r_ran, 4) if r_ran else None,
        "unsupportedReasons": dict(reasons.most_common()),
        "seedFlowMedianMs": None if impl.flow_ms is None else round(impl.flow_ms, 3),
        "seconds": round(impl.seconds, 3),
        "error": impl.error,
        "expectedFailures": expected,
    }


def document(impls: list[Implementation], cases: list[Case], wall: float, time_limit: float) -> dict[str, Any]:
    rows = []
    disagreements = []
    for case in cases:
        results = {}
        for impl in impls:
            o = _outcome(impl, case)
            results[impl.name] = {"outcome": o.outcome, "detail": o.detail, "mismatches": [str(m) for m in o.mismatches],
                                  "failedStep": o.failed_step}  # fmt: skip
        answered = {r["outcome"] for r in results.values() if r["outcome"] in (PASSED, FAILED)}
        if len(answered) > 1:
            disagreements.append(case.id)
        rows.append({"id": case.id, "area": case.area, "file": case.file, "level": case.level,
                     "decisions": list(case.data.get("decisions", [])), "description": case.data.get("description", ""),
                     "results": results})  # fmt: skip
    caught = {impl.name: [c.id for c in cases if c.level == "normative" and _outcome(impl, c).outcome == FAILED]
              for impl in impls if impl.kind == "faulty"}  # fmt: skip
    return {
        "format": MATRIX_FORMAT,
        "generatedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "wallSeconds": round(wall, 3),
        "timeLimitSeconds": time_limit,
        "implementations": [
            {"name": i.name, "spec": i.spec, "kind": i.kind, "era": i.era, "summary": _summary(i, cases)} for i in impls
        ],
        "cases": rows,
        "disagreements": disagreements,
        "caughtBy": caught,
    }


def matrix_schema() -> dict[str, Any]:
    from intentref._paths import data_dir

    schema: dict[str, Any] = json.loads((data_dir("conformance") / "matrix.schema.json").read_text("utf-8"))
    return schema


# --------------------------------------------------------------------------- badges


def _text_width(text: str) -> int:
    return 7 * len(text) + 10  # Verdana 11px averages under 7 px a character


def badge(label: str, value: str, colour: str) -> str:
    """A flat two-part SVG badge (our own drawing: no font metrics needed at this size)."""
    left, right = _text_width(label), _text_width(value)
    total = left + right
    e_label, e_value = html.escape(label), html.escape(value)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f'aria-label="{e_label}: {e_value}"><title>{e_label}: {e_value}</title>'
        f'<rect width="{left}" height="20" fill="#555"/><rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{left / 2}" y="14">{e_label}</text><text x="{left + right / 2}" y="14">{e_value}</text></g></svg>\n'
    )


def badge_for(summary: dict[str, Any]) -> str:
    n = summary["normative"]
    ran = n["total"] - n[UNSUPPORTED]
    colour = "#4c1" if n[FAILED] == 0 and n[ERRORED] == 0 and ran > 0 else ("#dfb317" if n[PASSED] else "#e05d44")
    return badge("intent-runtime normative", f"{n[PASSED]}/{ran}", colour)


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "implementation"


# --------------------------------------------------------------------------- the page

_SYMBOL = {PASSED: "✓", FAILED: "✗", UNSUPPORTED: "–", ERRORED: "!"}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 5px;vertical-align:top}
th.impl{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:normal;max-height:16em}
td.c{text-align:center;min-width:1.4em}
.passed{background:#e6f4ea}.failed{background:#fce8e6}.unsupported{background:#f1f3f4;color:#777}
.errored{background:#f3e8fd}
details.d summary{cursor:pointer;list-style:none}
details.d pre{position:absolute;z-index:2;background:#fff;border:1px solid #999;padding:6px;max-width:60em;
white-space:pre-wrap;text-align:left;font-size:12px}
.controls{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #ccc;z-index:3}
tr.hidden{display:none}
"""

_JS = """
function applyFilters(){
  const onlyDisagree=document.getElementById('disagree').checked;
  const caught=document.getElementById('caught').value;
  let shown=0;
  document.querySelectorAll('tr.case').forEach(function(row){
    let keep=true;
    if(onlyDisagree&&row.dataset.disagree!=='1')keep=false;
    if(caught&&(' '+row.dataset.caught+' ').indexOf(' '+caught+' ')<0)keep=false;
    row.classList.toggle('hidden',!keep);if(keep)shown++;
  });
  document.getElementById('shown').textContent=shown;
}
document.addEventListener('DOMContentLoaded',function(){
  // A link can open the page filtered: matrix.html#disagree, or #caught=<column number>.
  const hash=location.hash.slice(1);
  if(hash==='disagree')document.getElementById('disagree').checked=true;
  if(hash.indexOf('caught=')===0)document.getElementById('caught').value=hash.slice(7);
  document.getElementById('disagree').addEventListener('change',applyFilters);
  document.getElementById('caught').addEventListener('change',applyFilters);
  applyFilters();
});
"""


def render_html(doc: dict[str, Any]) -> str:
    e = html.escape
    impls = doc["implementations"]
    names = [i["name"] for i in impls]
    index = {n: k for k, n in enumerate(names)}
    caught_by: dict[str, list[str]] = {}
    for impl_name, ids in doc["caughtBy"].items():
        for case_id in ids:
            caught_by.setdefault(case_id, []).append(str(index[impl_name]))
    disagree = set(doc["disagreements"])
    out = ["<!doctype html><html lang=en><head><meta charset=utf-8><title>intent-runtime implementations</title>",
           f"<style>{_CSS}</style><script>{_JS}</script></head><body>",
           "<h1>intent-runtime implementations, side by side</h1>",
           f"<p>{len(doc['cases'])} cases, {len(impls)} implementations, {doc['wallSeconds']} s on "
           f"{e(str(doc['machine']['cpus']))} CPUs ({e(doc['machine']['platform'])}), {e(doc['generatedAt'])}.</p>",
           "<h2>Summary</h2><table><tr><th>implementation</th><th>kind</th><th>normative</th><th>pass rate</th>"
           "<th>reference agreement</th><th>seed order flow (median)</th><th>unsupported reasons</th>"
           "<th>badge</th></tr>"]  # fmt: skip
    for impl in impls:
        s = impl["summary"]
        n = s["normative"]
        rate = "–" if s["normativePassRate"] is None else f"{100 * s['normativePassRate']:.1f}%"
        agree = "–" if s["referenceAgreement"] is None else f"{100 * s['referenceAgreement']:.1f}%"
        flow = "–" if s["seedFlowMedianMs"] is None else f"{s['seedFlowMedianMs']:.2f} ms"
        listed = "".join(f"<li>{count} × {e(reason)}</li>" for reason, count in s["unsupportedReasons"].items())
        total = sum(s["unsupportedReasons"].values())
        # A long list folds away: the summary row stays one screen line per implementation.
        reasons = (f"<details><summary>{total} unsupported, {len(s['unsupportedReasons'])} reasons</summary>"
                   f"<ul>{listed}</ul></details>" if len(s["unsupportedReasons"]) > 2 else f"<ul>{listed}</ul>")  # fmt: skip
        problem = f"<br><b>{e(s['error'])}</b>" if s["error"] else ""
        out.append(f"<tr><td>{e(impl['name'])}<br><small>{e(impl['spec'])}</small>{problem}</td><td>{e(impl['kind'])}</td>"
                   f"<td>{n['passed']}/{n['total'] - n['unsupported']} ({n['failed']} failed, {n['errored']} errored)</td>"
                   f"<td>{rate}</td><td>{agree}</td><td>{flow}</td><td>{reasons}</td>"
                   f"<td>{badge_for(s)}</td></tr>")  # fmt: skip
    out.append("</table>")
    options = "".join(f"<option value='{index[n]}'>{e(n)}</option>" for n in doc["caughtBy"])
    out.append("<div class=controls><label><input type=checkbox id=disagree> only cases where implementations "
               "disagree</label> · <label>cases that caught <select id=caught><option value=''>(any)</option>"
               f"{options}</select></label> · <span id=shown></span> cases shown</div>")  # fmt: skip
    header = "".join(f"<th class=impl title='{e(n)}'>{e(n)}</th>" for n in names)
    for level in ("normative", "reference"):
        rows = [c for c in doc["cases"] if c["level"] == level]
        out.append(f"<h2>{level.capitalize()} cases ({len(rows)})</h2><table><tr><th>case</th><th>area</th>{header}</tr>")
        for case in rows:
            cells = []
            for name in names:
                r = case["results"][name]
                text = "\n".join([*r["mismatches"], r["detail"]]).strip()
                symbol = _SYMBOL[r["outcome"]]
                if text:
                    cell = f"<details class=d><summary>{symbol}</summary><pre>{e(text)}</pre></details>"
                else:
                    cell = symbol
                cells.append(f"<td class='c {r['outcome']}' title='{e(name)}: {r['outcome']}'>{cell}</td>")
            cites = f" ({e(', '.join(case['decisions']))})" if case["decisions"] else ""
            out.append(f"<tr class=case data-disagree='{int(case['id'] in disagree)}' "
                       f"data-caught='{' '.join(caught_by.get(case['id'], []))}'>"
                       f"<td title='{e(case['description'])}'>{e(case['id'])}{cites}</td><td>{e(case['area'])}</td>"
                       f"{''.join(cells)}</tr>")  # fmt: skip
        out.append("</table>")
    out.append("</body></html>\n")
    return "".join(out)


# --------------------------------------------------------------------------- the command


def add_parser(sub: Any) -> None:
    p = sub.add_parser("matrix", help="run many implementations through the suite; one side-by-side report",
                       description=(__doc__ or "").splitlines()[0])  # fmt: skip
    p.add_argument("--target", action="append", default=[], metavar="NAME=SPEC",
                   help=f"an implementation (repeatable); SPEC as for `intentref conformance --target`: "
                        f"{described()}")  # fmt: skip
    p.add_argument("--era", choices=ERAS, default="auto",
                   help="MCP era of the --target implementations: auto (negotiated, default), 2026 or legacy")  # fmt: skip
    p.add_argument("--targets", metavar="FILE", help='a JSON file {"targets": [{"name", "spec", "era"?, "expectedFailures"?}]}')
    p.add_argument("--include", action="append", default=[], choices=GROUPS,
                   help="add a bundled group (default when no target is given: all three)")  # fmt: skip
    p.add_argument("--out", default="matrix", metavar="DIR", help="folder for matrix.html, matrix.json, badges/ (default: matrix)")
    p.add_argument("--level", choices=("normative", "all"), default="all")
    p.add_argument("--only", action="append", default=[], metavar="PATTERN", help="case ids to run (fnmatch)")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S, metavar="S", help="for the whole run")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S", help="for each answer of a target")
    p.add_argument("--jobs", type=int, default=0, metavar="N", help="worker processes (default: the CPUs this process may use)")
    p.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except UsageError as exc:
        print(f"intentref matrix: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _main(args: argparse.Namespace) -> int:
    from intentref.suite.cases.fixtures import load_cases, select

    impls = [parse_target_option(t, args.era) for t in args.target]
    if args.targets:
        impls += read_targets_file(args.targets)
    groups = args.include or ([] if impls else list(GROUPS))
    impls += default_implementations(groups)
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
    cases = select(load_cases(), args.level, args.only, [])
    if not cases:
        raise UsageError("the selection holds no case")
    print(f"intentref matrix: {len(impls)} implementations × {len(cases)} cases", file=sys.stderr)

    def progress(impl: Implementation) -> None:
        state = impl.error or f"{sum(o.outcome == PASSED for o in impl.outcomes.values())} passed"
        print(f"  {impl.name}: {state} ({impl.seconds:.1f} s)", file=sys.stderr, flush=True)

    wall = run_matrix(impls, cases, time_limit=args.time_limit, timeout=args.timeout, jobs=args.jobs or None,
                      progress=progress)  # fmt: skip
    doc = document(impls, cases, wall, args.time_limit)
    out.mkdir(exist_ok=True)
    (out / "badges").mkdir(exist_ok=True)
    (out / "matrix.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", "utf-8")
    (out / "matrix.html").write_text(render_html(doc), "utf-8")
    for impl in doc["implementations"]:
        (out / "badges" / f"{_file_name(impl['name'])}.svg").write_text(badge_for(impl["summary"]), "utf-8")
    for impl in doc["implementations"]:
        s = impl["summary"]
        n = s["normative"]
        print(f"{impl['name']}: normative {n['passed']}/{n['total'] - n['unsupported']}"
              f"{'' if not s['error'] else '  (' + s['error'] + ')'}")  # fmt: skip
    print(f"wrote {out / 'matrix.html'}, {out / 'matrix.json'} and {len(impls)} badges in {out / 'badges'} "
          f"({wall:.1f} s)")  # fmt: skip
    return EXIT_OK
