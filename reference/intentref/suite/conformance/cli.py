"""intentref conformance: run the conformance suite against a target.

    intentref conformance [--in-process | --stdio CMD | --http URL | --http-reference | --harness CMD]
                          [--era 2026|legacy] [--level normative|all] [--only PAT] [--skip PAT]
                          [--expected-failures FILE] [--timeout S] [--json F] [--junit F] [--html F]
    intentref conformance --harness CMD --smoke
    intentref conformance --write-mjs [--check]

Without a target option the bundled reference server runs over real stdio in the
2026-07-28 era.  Exit statuses are ``EXIT_STATUSES`` (D-CNF-013).  Every mistake on the
command line (an option, a file, a report path, a selection of nothing) is found before
any case runs.  Only argparse is imported here, so ``intentref --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

# spec: D-CNF-013 -- one status per kind of outcome, so a CI script can tell them apart.
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_TARGET_UNUSABLE: Final = 3
EXIT_NOTHING_SELECTED: Final = 4
EXIT_STATUSES: Final = (
    (EXIT_OK, "every case passed or was unsupported (expected failures allowed, none stale)"),
    (EXIT_FAILED, "a case failed or errored, or an expected-failures entry is stale"),
    (EXIT_USAGE, "a usage error: an option, a file or a report path (found before any case runs)"),
    (EXIT_TARGET_UNUSABLE, "the target could not start, or does not serve the instances the cases use"),
    (EXIT_NOTHING_SELECTED, "the selection (--level, --only, --skip) selects no case"),
)
TARGET_SPECS: Final = "in-process, variant:NAME, reference, stdio:COMMAND, http:URL, http-reference, harness:COMMAND, python:MODULE:ATTR"


class UsageError(Exception):
    """A bad option value found after parsing (a template, a baseline file): exit status 2."""


class NothingSelected(Exception):
    """The selection selects no case: exit status 4, so a mistyped pattern never passes in CI."""


def exit_status_text() -> str:
    """The exit statuses as the --help epilog lists them."""
    return "exit status:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_STATUSES)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = exit_status_text()
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keeps the epilog's lines
    targets = p.add_argument_group("target (default: the bundled reference over stdio)")
    group = targets.add_mutually_exclusive_group()
    group.add_argument("--in-process", action="store_true", help="the reference Bridge called directly")
    group.add_argument(
        "--stdio",
        metavar="COMMAND",
        help="an MCP server started per run with COMMAND; {config} is the instances file; "
        "{maxJobs}, {maxReplayEntries}, {maxReplayBytes}, {jobTtlMs} and {replayTtlMs} are the Bridge "
        "options; [ ... ] groups are dropped when their option is unset",
    )
    group.add_argument("--http", metavar="URL", help="an MCP server already serving streamable HTTP at URL, "
                       "with the suite's instances (intent-runtime-mcp --config conformance/instances.json --http ...)")
    group.add_argument("--http-reference", action="store_true", help="the bundled reference over HTTP on 127.0.0.1")
    group.add_argument("--harness", metavar="COMMAND", help="a JSON-lines harness (conformance/harness.schema.json)")
    group.add_argument("--target", metavar="SPEC", help=f"any target by its spec: {TARGET_SPECS}")
    targets.add_argument("--era", choices=("2026", "legacy"), default="2026",
                         help="MCP era: 2026 (2026-07-28, default) or legacy (initialize handshake)")  # fmt: skip
    targets.add_argument("--cold-start", action="store_true",
                         help="default target: start every server process from the console script, not forked")  # fmt: skip
    targets.add_argument("--smoke", action="store_true", help="with --harness: check the harness protocol only")

    chosen = p.add_argument_group("selection")
    chosen.add_argument("--level", choices=("normative", "all"), default="all", help="normative: only seed-required cases")
    chosen.add_argument("--only", action="append", default=[], metavar="PATTERN", help="case ids to run (fnmatch, repeatable)")
    chosen.add_argument("--skip", action="append", default=[], metavar="PATTERN", help="case ids to leave out (repeatable)")
    chosen.add_argument("--expected-failures", metavar="FILE", help="case ids expected to fail (JSON or text)")
    chosen.add_argument("--cases", metavar="DIR", help="fixture folder (default: the bundled conformance/cases)")
    chosen.add_argument("--timeout", type=float, default=10.0, metavar="S",
                        help="longest wait for one answer (default 10 s); longer is errored")  # fmt: skip

    out = p.add_argument_group("reports")
    out.add_argument("--json", dest="json_out", metavar="FILE", help="write the JSON report")
    out.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    out.add_argument("--html", metavar="FILE", help="write a self-contained HTML page")

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
    from intentref.suite.conformance.targets import load_instances

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


# --------------------------------------------------------------------------- targets


def make_target(spec: str, era: str = "2026", timeout: float = 10.0, cold_start: bool = False
                ) -> tuple[Any, Callable[[], None]]:  # fmt: skip
    """A target from its spec (``TARGET_SPECS``) and the function that releases it all."""
    kind, _, rest = spec.partition(":")
    if kind == "in-process":
        from intentref.suite.conformance.targets import InProcessTarget

        target: Any = InProcessTarget()
        return target, target.close
    if kind == "variant":  # the reference with other decisions (D-CNF-040)
        from intentref.suite.conformance import variants

        try:
            target = variants.target(rest)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        return target, target.close
    if kind == "python":
        import importlib

        module, _, attr = rest.rpartition(":")
        made = getattr(importlib.import_module(module), attr)
        target = made() if callable(made) and not hasattr(made, "open") else made
        return target, target.close
    if kind == "harness":
        from intentref.suite.conformance.harness import HarnessTarget

        target = HarnessTarget(rest, timeout)
        return target, target.close
    from intentref.suite.conformance import mcp_targets

    try:
        if kind == "reference":
            target = mcp_targets.StdioTarget.reference(era, timeout, fork=not cold_start)
            return target, target.close
        if kind == "stdio":
            target = mcp_targets.StdioTarget(rest, era, timeout)
            return target, target.close
    except ValueError as exc:  # a bad template
        raise UsageError(str(exc)) from None
    if kind == "http":
        target = mcp_targets.HttpTarget(rest, era, timeout)
        return target, target.close
    if kind == "http-reference":
        from intentref.suite.conformance.targets import load_instances

        server = mcp_targets.HttpReference(load_instances())
        target = mcp_targets.HttpTarget(server.url, era, timeout, name=f"reference over HTTP ({era}) at {server.url}")

        def close() -> None:
            try:
                target.close()
            finally:
                server.close()

        return target, close
    raise UsageError(f"unknown target {spec!r}; use one of: {TARGET_SPECS}")


def _spec(args: argparse.Namespace) -> str:
    if args.target:
        return str(args.target)
    if args.in_process:
        return "in-process"
    if args.stdio:
        return f"stdio:{args.stdio}"
    if args.http:
        return f"http:{args.http}"
    if args.http_reference:
        return "http-reference"
    if args.harness:
        return f"harness:{args.harness}"
    return "reference"


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
        from intentref.suite.conformance.harness import smoke

        return EXIT_OK if smoke(args.harness, args.timeout) else EXIT_FAILED
    from intentref.suite.conformance.targets import TargetCannotStart

    try:
        return _run(args)
    except UsageError as exc:
        print(f"intentref conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NothingSelected as exc:
        print(f"intentref conformance: {exc}", file=sys.stderr)
        return EXIT_NOTHING_SELECTED
    except TargetCannotStart as exc:
        print(f"intentref conformance: the target could not start: {exc}", file=sys.stderr)
        return EXIT_TARGET_UNUSABLE
    except MissingInstances as exc:
        print(f"intentref conformance: {exc}", file=sys.stderr)
        return EXIT_TARGET_UNUSABLE


_REPORT_NAMES: Final = {"--json": "JSON", "--junit": "JUnit XML", "--html": "HTML"}


class MissingInstances(Exception):
    """A server configured elsewhere lacks instances the selected cases use: exit status 3."""


def _report_paths(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(flag, path, writer) of every report asked for, each path checked before the run (D-CNF-013)."""
    from intentref.suite.conformance.reports import output_problem

    wanted = [("--json", args.json_out, "write_json"), ("--junit", args.junit, "write_junit"),
              ("--html", args.html, "write_html")]  # fmt: skip
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


def _program_problem(args: argparse.Namespace) -> str | None:
    """Why the program of a --stdio or --harness command cannot be run, or None: asked before
    the fixtures load, so a mistyped command costs no start-up (D-CNF-013)."""
    import shlex

    from intentref.suite.conformance.targets import program_problem

    command = args.stdio or args.harness
    if not command:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None  # an unbalanced quote: building the target says so as a usage error
    if not words or words[0].startswith(("[", "{")):
        return None
    problem = program_problem(words[0])
    return None if problem is None else f"cannot run {words[0]!r}: {problem}"


def _selected(args: argparse.Namespace) -> list[Any]:
    from intentref.suite.conformance.fixtures import load_cases, select

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


def _check_instances(target: Any, cases: list[Any]) -> None:
    """A server configured elsewhere must serve the instances the cases use; say which it lacks."""
    if not getattr(target, "configured_elsewhere", False):
        return
    from intentref.suite.conformance.preflight import missing_instances
    from intentref.suite.conformance.targets import load_instances

    suite = load_instances()
    used = sorted({name for case in cases if "setup" not in case.data
                   for name in case.data.get("instances", []) if name in suite})  # fmt: skip
    missing = missing_instances(target, used)
    if missing:
        raise MissingInstances(
            f"{getattr(target, 'name', 'the server')} does not serve the instance(s) {', '.join(missing)} that the "
            "selected cases use; start it with the suite's instances: "
            "intent-runtime-mcp --config conformance/instances.json --http 127.0.0.1:8765"
        )


def _run(args: argparse.Namespace) -> int:
    from intentref.suite.conformance import baseline
    from intentref.suite.conformance.runner import execute
    from intentref.suite.conformance.targets import TargetCannotStart

    listed: dict[str, str] = {}
    if args.expected_failures:
        try:
            listed = baseline.load(args.expected_failures)
        except baseline.BaselineError as exc:
            raise UsageError(str(exc)) from None
    if args.cases and not Path(args.cases).is_dir():
        raise UsageError(f"--cases {args.cases}: not a folder")
    report_paths = _report_paths(args)
    spec = _spec(args)
    problem = _program_problem(args)
    if problem is not None:
        # A bad template is a usage error even when its program is also missing: building
        # the target says so first; a sound one is released unused.
        make_target(spec, args.era, args.timeout, args.cold_start)[1]()
        raise TargetCannotStart(problem)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    # The selection before the target: a selection of nothing is a mistake found in the
    # time it takes to read the fixtures, with no server started and stopped for it.
    cases = _selected(args)
    target, release = make_target(spec, args.era, args.timeout, args.cold_start)
    console = _console()
    first_done: list[float] = []
    try:
        _check_instances(target, cases)
        with _progress(console, cases) as advance:

            def on_outcome(case: Any, outcome: Any) -> None:
                if not first_done:
                    first_done.append(time.perf_counter())
                advance(case, outcome)

            outcomes = execute(cases, target, on_outcome=on_outcome)
    finally:
        release()
    ended = time.perf_counter()
    run_info = _run_info(args, spec, target, started_at, ended - started, len(cases))
    _print_summary(console, run_info, cases, outcomes, args.cases)
    from intentref.suite.conformance import reports

    for flag, path, writer in report_paths:
        getattr(reports, writer)(path, run_info, cases, outcomes)
        print(f"{_REPORT_NAMES[flag]} report written to {path}")
    if first_done and len(cases) > 1:
        # Start-up (a server, an interpreter, the first run) is paid once; the rate that
        # matters for a long suite is the one after it.
        rate = (len(cases) - 1) / max(ended - first_done[0], 1e-9)
        print(f"{len(cases)} cases in {ended - started:.1f} s; {rate:.0f} cases/s after start-up "
              f"({first_done[0] - started:.1f} s)")  # fmt: skip
    verdict = baseline.judge(outcomes, listed)
    if listed:
        print(f"expected failures: {len(verdict.expected)} still failing, {len(verdict.stale)} stale, "
              f"{len(verdict.not_run)} not run")  # fmt: skip
        for case_id in verdict.stale:
            print(f"  stale: {case_id} passes now; remove it from {args.expected_failures}")
    return EXIT_OK if verdict.ok else EXIT_FAILED


def _run_info(args: argparse.Namespace, spec: str, target: Any, started_at: datetime, seconds: float,
              count: int) -> dict[str, Any]:  # fmt: skip
    from intentref import __version__

    transport = getattr(target, "transport", "?")
    return {
        "target": getattr(target, "name", spec),
        "transport": transport,
        "era": args.era if transport == "mcp" else "-",  # only MCP has eras
        "started": started_at.isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "python": platform.python_version(),
        "intentref version": __version__,
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


@contextlib.contextmanager
def _progress(console: Any, cases: list[Any]) -> Any:
    from intentref.suite.conformance.reports import LiveProgress

    with LiveProgress(console, len(cases), cases=cases) as progress:
        yield progress.advance


def _print_summary(console: Any, run_info: dict[str, Any], cases: list[Any], outcomes: list[Any],
                   folder: str | None) -> None:  # fmt: skip
    from intentref.suite.conformance.reports import area_titles, print_summary

    print_summary(console, run_info, cases, outcomes, area_titles(folder))
