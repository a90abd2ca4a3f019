"""``intentref bench``'s figures for ``intentref host``: the catalogue against a real host, run as a command.

The judge's cost is what a host developer waits for beyond their own host: per scenario
run, the judge's server (forked warm), the scripted model's runs and the judging.  The
floor beside it is the host's own start-up (the README's Python host, started and stopped
without work: the MCP SDK import dominates), which no judge can remove.  The second figure
is issue 26's: the whole normative catalogue in at most 60 s; the last two are issue 38's:
the catalogue over HTTP within 1.5x its stdio time, and 200 fuzz scenarios in 120 s.
"""

from __future__ import annotations

import pathlib
import shlex
import subprocess
import sys
import time
from typing import Any

from intentref.devtools.figure import Figure

_HOST_IN_CHECKOUT = pathlib.Path("tests") / "hosts" / "python_host.py"


def _host() -> pathlib.Path | None:
    """The reference Python host of a checkout: the one benchmarks run from (the working
    folder), else the one this module sits in (an editable install).  A wheel has no tests/."""
    for root in (pathlib.Path.cwd(), pathlib.Path(__file__).resolve().parents[3]):
        if (root / _HOST_IN_CHECKOUT).is_file():
            return root / _HOST_IN_CHECKOUT
    return None


CATALOGUE_TARGET_SECONDS = 60.0
HTTP_TARGET_RATIO = 1.5  # issue 38: the catalogue over HTTP within 1.5x its stdio time
FUZZ_COUNT, FUZZ_TARGET_SECONDS = 200, 120.0  # issue 38: 200 fuzz scenarios in at most 120 s


def _host_start_seconds(host: pathlib.Path, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, str(host), "--help"], capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return sorted(samples)[len(samples) // 2]


def _judged(argv: list[str], scenarios: list[dict[str, Any]], fork_socket: str | None,
            http: bool = False) -> tuple[float, str]:  # fmt: skip
    """Seconds the judge took on ``scenarios`` (2 workers), and a note naming any that failed."""
    from intentref.suite.host import judge

    started = time.perf_counter()
    verdicts = judge.judge_scenarios(argv, scenarios, jobs=2, fork_socket=fork_socket, http=http)
    failed = [v.id for v in verdicts if v.failed()]
    return time.perf_counter() - started, f"; FAILED {', '.join(failed)}" if failed else ""


def figures(smoke: bool) -> list[Figure]:
    host = _host()
    if host is None:  # an installed wheel run outside a checkout: no host to measure against
        return []
    from intentref.suite.host import fuzz, judge

    line = f"{shlex.quote(sys.executable)} {shlex.quote(str(host))} --model {{model}} --request {{request}}"
    argv = judge.check_command(line + " --server {server}")
    http_argv = judge.check_command(line + " --url {url}", http=True)
    scenarios = judge.load_scenarios(judge.catalogue_paths()[: 2 if smoke else None])
    drawn = fuzz.draw_plans(1, 4 if smoke else FUZZ_COUNT)
    fuzzed = [fuzz.scenario_of(plan, f"FUZZ-1-{i + 1}") for i, plan in enumerate(drawn)]
    runs, fuzz_runs = (sum(len(judge.wordings_of(s)) for s in chosen) for chosen in (scenarios, fuzzed))
    start = _host_start_seconds(host, 1 if smoke else 3)
    with judge.fork_server() as fork_socket:
        seconds, note = _judged(argv, scenarios, fork_socket)
        http_seconds, http_note = _judged(http_argv, scenarios, fork_socket, http=True)
        fuzz_seconds, fuzz_note = _judged(argv, fuzzed, fork_socket)
    return [
        Figure("host judge per run", seconds * 2 / runs, start, "s/run", 2.0,
               f"{runs} runs of the {len(scenarios)} scenarios on 2 workers vs the host's own start-up ({start:.2f} s){note}"),
        Figure("host catalogue", seconds, CATALOGUE_TARGET_SECONDS, "s", 1.0,
               f"the whole catalogue against tests/hosts/python_host.py as a command vs issue 26's {CATALOGUE_TARGET_SECONDS:.0f} s"),
        Figure("host catalogue over HTTP", http_seconds, seconds, "s", HTTP_TARGET_RATIO,
               f"the same catalogue with --http (the host given {{url}}) vs over stdio{http_note}"),
        Figure(f"host fuzz {len(fuzzed)}", fuzz_seconds, FUZZ_TARGET_SECONDS, "s", 1.0,
               f"--fuzz --seed 1 --count {len(fuzzed)} against the same host ({fuzz_runs} runs: its own start-up alone "
               f"{fuzz_runs * start / 2:.0f} s on 2 workers) vs issue 38's {FUZZ_TARGET_SECONDS:.0f} s{fuzz_note}"),
    ]  # fmt: skip
