"""Run a host through scenarios and judge what it did (D-HST-001, D-HST-007, D-HST-008).

``check_command`` finds command-line mistakes before anything runs; ``run_scenario`` runs
the host once (its server, its model and its request all prepared in a fresh folder) and
reads back the ``Run``; ``judge_scenarios`` runs every scenario, in both wordings where
asked, and returns one ``ScenarioVerdict`` per scenario.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from intentref._paths import data_dir
from intentref.suite.execution.pool import map_in_workers
from intentref.suite.host.rules import Violation, compare_wordings, judge_run, reached_server
from intentref.suite.host.trace import Run, read_timeline

PLACEHOLDERS: Final = ("server", "model", "request")
# With --http the judge starts the server itself and the host connects to {url} instead.
HTTP_PLACEHOLDERS: Final = ("url", "model", "request")
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z_]+)\}")
DEFAULT_TIMEOUT: Final = 30.0
# How long the judge waits, once the host has exited, for a server it started to log its close.
CLOSE_GRACE: Final = 3.0
# How long the judge's HTTP server may take to print its URL.
HTTP_START_SECONDS: Final = 30.0
# The most of a host's stdout or stderr the judge reads: a reply is far smaller.
OUTPUT_LIMIT: Final = 16 * 1024 * 1024
MODEL_SCRIPT: Final = pathlib.Path(__file__).with_name("model.py")
LAUNCHER: Final = pathlib.Path(__file__).with_name("launch.py")
FAILING_LEVELS: Final = {
    "normative": ("normative", "contract"),
    "reference": ("normative", "contract", "reference"),
}


class UsageProblem(Exception):
    """A mistake in how the judge was called: reported as one line before any scenario runs."""


# --------------------------------------------------------------------------- the command line


def check_command(command: str, http: bool = False) -> list[str]:
    """The host's argv template, or UsageProblem saying what is wrong with ``command``."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageProblem(f"--command cannot be split into arguments: {exc}") from None
    if not argv:
        raise UsageProblem("--command is empty")
    used = {name for token in argv for name in _PLACEHOLDER.findall(token)}
    wanted = HTTP_PLACEHOLDERS if http else PLACEHOLDERS
    unknown = sorted(used - set(wanted))
    if unknown:
        mode = " with --http" if http else ""
        raise UsageProblem(f"--command has an unknown placeholder {{{unknown[0]}}}; the placeholders{mode} are "
                           + ", ".join(f"{{{p}}}" for p in wanted))  # fmt: skip
    missing = [p for p in wanted if p not in used]
    if missing:
        raise UsageProblem(f"--command lacks the placeholder {{{missing[0]}}}: the host needs "
                           + {"server": "the server to start", "url": "the server's URL", "model": "the model to run",
                              "request": "the request file"}[missing[0]])  # fmt: skip
    program = argv[0]
    if _PLACEHOLDER.search(program):
        raise UsageProblem("--command must start with the host's program, not a placeholder")
    if shutil.which(program) is None:
        raise UsageProblem(f"--command: the program {program!r} is not found or not executable")
    return argv


def load_scenario(path: pathlib.Path) -> dict[str, Any]:
    import jsonschema

    try:
        document = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageProblem(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageProblem(f"{path}: cannot be read ({exc})") from None
    except ValueError as exc:
        raise UsageProblem(f"{path}: not JSON ({exc})") from None
    validator = jsonschema.Draft202012Validator(scenario_schema())
    error = next(iter(sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        raise UsageProblem(f"{path}: not a host scenario at {where}: {error.message[:200]}")
    return dict(document)


def scenario_schema() -> dict[str, Any]:
    return dict(json.loads((data_dir("conformance") / "host-scenario.schema.json").read_text("utf-8")))


def catalogue_paths() -> list[pathlib.Path]:
    return sorted((data_dir("conformance") / "hosts").glob("*.json"))


def load_scenarios(paths: Iterable[pathlib.Path]) -> list[dict[str, Any]]:
    scenarios = [load_scenario(path) for path in paths]
    seen: set[str] = set()
    for scenario in scenarios:
        if scenario["id"] in seen:
            raise UsageProblem(f"scenario {scenario['id']} is given twice")
        seen.add(scenario["id"])
    return scenarios


# --------------------------------------------------------------------------- one run


def _package_root() -> str:
    # The folder holding the intentref package this judge runs from: the server the host
    # starts must import the same code, whether installed or in a checkout.
    return str(pathlib.Path(__file__).resolve().parents[3])


def with_era(scenario: dict[str, Any], era: str) -> dict[str, Any]:
    """``scenario`` with its server speaking ``era`` (``intentref host --era``, D-CNF-066)."""
    return {**scenario, "server": {**scenario["server"], "era": era}}


def served_era(scenario: dict[str, Any]) -> str:
    """The era the judge's server speaks in ``scenario``: ``auto`` (both) unless ``--era`` pinned one."""
    return str(scenario["server"].get("era", "auto"))


def spoken_eras(run: Run) -> set[str]:
    """The eras (``2026``, ``legacy``) the host's tool calls came in, as the server saw them (D-CNF-066)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return {"2026" if call.protocol in MODERN_PROTOCOL_VERSIONS else "legacy"
            for call in run.calls if call.protocol is not None}  # fmt: skip


def placeholder_values(folder: pathlib.Path, scenario: dict[str, Any], wording: str,
                       fork_socket: str | None = None) -> dict[str, str]:  # fmt: skip
    request = folder / "request.json"
    request.write_text(json.dumps(scenario["request"], ensure_ascii=False), "utf-8")
    script = folder / "model-script.json"
    script.write_text(json.dumps(scenario["model"], ensure_ascii=False), "utf-8")
    behaviour = folder / "server-behaviour.json"
    behaviour.write_text(json.dumps({"faults": scenario["server"]["faults"], "wording": wording,
                                     "era": served_era(scenario)}), "utf-8")  # fmt: skip
    # A host's SDK may start its server with a bare environment (the Python and TypeScript
    # SDKs pass only PATH, HOME and the like), so the command carries its own import path.
    launcher = f"import sys; sys.path.insert(0, {_package_root()!r}); from intentref.suite.host.serve import main; sys.exit(main())"
    server = [
        sys.executable,
        "-I",
        "-c",
        launcher,
        "--log",
        str(folder / "server.log"),
        "--behaviour",
        str(behaviour),
    ]
    model = [
        sys.executable,
        "-I",
        "-S",
        str(MODEL_SCRIPT),
        "--script",
        str(script),
        "--log",
        str(folder / "model.log"),
    ]
    if fork_socket is not None:  # the same server, forked warm (forkserver); the slow start is the fallback
        server = [sys.executable, "-I", "-S", str(LAUNCHER), fork_socket, "--", *server]
    return {"server": shlex.join(server), "model": shlex.join(model), "request": str(request)}


def _start_http_server(server_command: str) -> tuple[subprocess.Popen[str], str]:
    """The judge's server over HTTP (D-HST-010), forked warm like ``{server}`` (D-HST-011), and its URL."""
    process = subprocess.Popen([*shlex.split(server_command), "--http"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)  # fmt: skip
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline() if process.stdout else ""))
    reader.start()
    reader.join(HTTP_START_SECONDS)
    if not line or not line[0].startswith("url "):
        _stop(process)
        raise RuntimeError("the judge's HTTP server did not start")
    return process, line[0].split(" ", 1)[1].strip()


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM (uvicorn's graceful stop ends every session and so logs its close), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead to us: waitpid of its parent has not run yet, nothing serves.
    with contextlib.suppress(OSError):
        status = pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
        return status != "Z"
    return True


def _head(path: pathlib.Path, limit: int = OUTPUT_LIMIT) -> bytes:
    with open(path, "rb") as file:
        return file.read(limit)


def run_scenario(argv: Sequence[str], scenario: dict[str, Any], wording: str, timeout: float = DEFAULT_TIMEOUT,
                 fork_socket: str | None = None, http: bool = False) -> Run:  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="intentref-host-") as name:
        folder = pathlib.Path(name)
        values = placeholder_values(folder, scenario, wording, fork_socket)
        http_server = None
        if http:
            http_server, values["url"] = _start_http_server(values["server"])
        host_argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], token) for token in argv]
        started = time.monotonic()
        # Files, not pipes: the host's end is its exit, even if a child of it keeps the
        # output descriptors open (a pipe would only end when every holder closed it).
        out_file, err_file = folder / "host.stdout", folder / "host.stderr"
        with open(out_file, "wb") as out, open(err_file, "wb") as err:
            process = subprocess.Popen(host_argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       start_new_session=True)  # fmt: skip
        exit_status: int | None
        try:
            exit_status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            exit_status = None
        stdout, stderr = _head(out_file), _head(err_file)
        seconds = time.monotonic() - started
        server_log, model_log = folder / "server.log", folder / "model.log"
        deadline = time.monotonic() + CLOSE_GRACE
        while True:
            _, connections = read_timeline(server_log, model_log)
            open_pids = [c.pid for c in connections.values() if not c.closed and c.pid and _alive(c.pid)]
            if not open_pids or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for pid in open_pids:  # a server the host left behind: R-HST-013, and never left running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # Whatever else the host left in its process group (a child holding its connection
        # open, say) is not the judge's to keep either.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if http_server is not None:
            _stop(http_server)
        timeline, connections = read_timeline(server_log, model_log)
        return Run(
            scenario_id=scenario["id"], wording=wording, timeline=timeline, connections=connections,
            host_exit=exit_status, host_stdout=stdout.decode("utf-8", "replace"),
            host_stderr=stderr.decode("utf-8", "replace")[-4000:], seconds=seconds, left_running=open_pids,
        )  # fmt: skip


# --------------------------------------------------------------------------- verdicts


@dataclass
class ScenarioVerdict:
    """What the judge found on one scenario: the rules the host broke, in which wording."""

    scenario: dict[str, Any]
    violations: list[tuple[str, Violation]] = field(default_factory=list)  # (wording, violation)
    seconds: float = 0.0
    runs: list[Run] = field(default_factory=list)
    # One line per run in which the host never reached the server (its exit and the end of
    # its stderr): kept when the runs are dropped, for the one line of a host that cannot run.
    unreached: list[str] = field(default_factory=list)
    eras: set[str] = field(default_factory=set)  # the eras the host spoke in its runs (D-CNF-066), kept without them

    @property
    def id(self) -> str:
        return str(self.scenario["id"])

    def failed(self, level: str = "normative") -> bool:
        return any(v.level in FAILING_LEVELS[level] for _, v in self.violations)

    def lines(self, level: str = "normative") -> list[str]:
        """One line per violation that fails the scenario at ``level``."""
        return [violation_line(self, w, v) for w, v in self.violations if v.level in FAILING_LEVELS[level]]


def wordings_of(scenario: dict[str, Any]) -> list[str]:
    wanted = scenario["server"]["wordings"]
    return ["reference", "alternate"] if wanted == "both" else [wanted]


def verdict_of(scenario: dict[str, Any], runs: Sequence[tuple[str, Run]]) -> ScenarioVerdict:
    """The verdict on ``scenario`` from its runs, one per wording: each run's rules, then the
    two wordings against each other (D-HST-008).  Every way of running a host ends here."""
    verdict = ScenarioVerdict(scenario)
    for wording, run in runs:
        verdict.runs.append(run)
        verdict.eras |= spoken_eras(run)
        verdict.seconds += run.seconds
        if not reached_server(run):
            verdict.unreached.append(_how_it_ended(run))
        verdict.violations.extend((wording, v) for v in judge_run(run, scenario.get("expect")))
    if len(verdict.runs) == 2:
        verdict.violations.extend(("alternate", v) for v in compare_wordings(*verdict.runs))
    return verdict


# How much of a host's stderr the one line of a host that never ran quotes: the line that
# names what went wrong ("Error: Cannot find module ...", "ModuleNotFoundError: ..."), not a
# whole traceback.
STDERR_TAIL_CHARACTERS: Final = 300


def _telling_line(stderr: str) -> str:
    """The last line of ``stderr`` that names an error, not a stack frame; else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() and not line.startswith(("at ", "File "))]
    return (errors or lines or [""])[-1][:STDERR_TAIL_CHARACTERS]


def _how_it_ended(run: Run) -> str:
    ended = "it was stopped at the time limit" if run.timed_out else f"exit status {run.host_exit}"
    said = _telling_line(run.host_stderr)
    return f"{ended}; stderr: {said}" if said else f"{ended}; no stderr"


def never_ran(verdicts: Sequence[ScenarioVerdict]) -> str | None:
    """The one line for a host that reached the server in no run at all (issue 38): a host that
    cannot run is a target that could not start, not a host that passes every scenario."""
    if not verdicts or not all(v.unreached and len(v.unreached) == len(wordings_of(v.scenario)) for v in verdicts):
        return None
    return f"the host never reached the server in any scenario: {verdicts[0].unreached[0]}"


def judge_scenario(argv: Sequence[str], scenario: dict[str, Any], timeout: float = DEFAULT_TIMEOUT,
                   fork_socket: str | None = None, http: bool = False) -> ScenarioVerdict:  # fmt: skip
    return verdict_of(scenario, [(wording, run_scenario(argv, scenario, wording, timeout, fork_socket, http))
                                 for wording in wordings_of(scenario)])  # fmt: skip


def judge_scenarios(argv: Sequence[str], scenarios: Sequence[dict[str, Any]], *, jobs: int = 2,
                    timeout: float = DEFAULT_TIMEOUT, fork_socket: str | None = None,
                    http: bool = False) -> list[ScenarioVerdict]:  # fmt: skip
    """Every scenario's verdict, in order, ``jobs`` scenarios at a time on the suite's worker
    processes (``intentref.suite.execution.pool``)."""
    judged = functools.partial(_judged, argv, timeout=timeout, fork_socket=fork_socket, http=http)
    return map_in_workers(judged, scenarios, max(1, jobs))


def _judged(argv: Sequence[str], scenario: dict[str, Any], *, timeout: float, fork_socket: str | None,
            http: bool) -> ScenarioVerdict:  # fmt: skip
    verdict = judge_scenario(argv, scenario, timeout, fork_socket, http)
    verdict.runs = []  # judged: a run can hold megabytes (over-budget texts), a long fuzz run hundreds
    return verdict


@contextlib.contextmanager
def fork_server() -> Iterator[str | None]:
    """A running ``forkserver`` for this judge run: its socket, or None when it would not start."""
    with tempfile.TemporaryDirectory(prefix="intentref-host-fork-") as folder:
        path = str(pathlib.Path(folder) / "fork.sock")
        launcher = f"import sys; sys.path.insert(0, {_package_root()!r}); from intentref.suite.host.forkserver import main; sys.exit(main(sys.argv[1:]))"
        process = subprocess.Popen([sys.executable, "-I", "-c", launcher, path], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        try:
            ready = process.stdout.readline() if process.stdout else ""
            yield path if ready.startswith("intentref-zygote ready") else None
        finally:
            if process.stdin:
                process.stdin.close()  # its end of input: it stops, taking any child with it
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def violation_line(verdict: ScenarioVerdict, wording: str, violation: Violation) -> str:
    """One line per violation: the rule (and its level), the scenario, the call."""
    suffix = " [alternate wording]" if wording == "alternate" else ""
    return f"{violation.rule} ({violation.level}) {verdict.id}{suffix} {violation.where}: {violation.message}"
