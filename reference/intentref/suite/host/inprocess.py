"""The judge in process: a host coroutine, an MCP client and the scripted model, no subprocess.

    async def my_host(client, model, request) -> dict | None: ...
    verdict = judge_in_process(my_host, "HST-004")

``client`` is an ``mcp.Client`` connected in memory to the judge's server (the reference
Bridge behind the same recording proxy as ``serve``: same faults, same wordings);
``model`` is a ``ScriptedModel``: ``await model(task)`` gives a ``ModelAnswer`` (``status``
0, 3, 4 or another, and ``text``), as the command-line model's exit status and stdout do.
The coroutine returns the final BridgeReply, or None when it stopped without one (raising
counts as None).  The same rules judge it, except R-HST-005 and R-HST-013: here the judge
owns the one connection and closes it itself.  ``host_judge`` (``pytest_fixture``) wraps it.
"""

from __future__ import annotations

import json
import pathlib
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client

from intentref.bridge import create_intent_bridge
from intentref.suite.host import model as scripted
from intentref.suite.host.judge import (
    DEFAULT_TIMEOUT,
    catalogue_paths,
    load_scenario,
    served_era,
    verdict_of,
    wordings_of,
)
from intentref.suite.host.judge import ScenarioVerdict as Verdict
from intentref.suite.host.serve import Recorder, _active_jobs, build_server, suite_instances
from intentref.suite.host.trace import Run, read_timeline
from intentref.suite.targets.mcp import EraChoice


@dataclass(frozen=True)
class ModelAnswer:
    status: int  # 0 a candidate, 3 a refusal, 4 incomplete output, anything else a failure
    text: str


class ScriptedModel:
    """The scenario's model, called in process; every run is logged as the command's are."""

    def __init__(self, script: list[dict[str, Any]], log: pathlib.Path) -> None:
        self._script = script
        self._log = log
        self.runs = 0

    async def __call__(self, task: Any) -> ModelAnswer:
        behaviour = self._script[self.runs] if self.runs < len(self._script) else {"unscripted": True}
        text, status = scripted.answer(behaviour)
        record = {"run": self.runs, "t": time.time(), "stdin": None, "task": task, "behaviour": behaviour,
                  "stdout": text, "exit": status}  # fmt: skip
        with open(self._log, "a", encoding="utf-8") as log:
            log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.runs += 1
        return ModelAnswer(status, text)


HostCoroutine = Callable[[Client, ScriptedModel, dict[str, Any]], Awaitable[dict[str, Any] | None]]


async def run_in_process(host: HostCoroutine, scenario: dict[str, Any], wording: str,
                         timeout: float = DEFAULT_TIMEOUT) -> Run:  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="intentref-host-") as name:
        folder = pathlib.Path(name)
        server_log, model_log = folder / "server.log", folder / "model.log"
        recorder = Recorder(str(server_log), "in-process")
        bridge = create_intent_bridge({"instances": suite_instances()})
        session = bridge.connect()
        behaviour = {"faults": scenario["server"]["faults"], "wording": wording, "era": served_era(scenario)}
        server = build_server(session, recorder, behaviour)
        model = ScriptedModel(scenario["model"], model_log)
        recorder.write("open", pid=None)
        reply: dict[str, Any] | None = None
        finished = False
        started = time.monotonic()
        try:
            # The judge's client is the host's here: it speaks the era the server was pinned to.
            async with Client(server, mode=EraChoice(served_era(scenario)).mode()) as client:
                with anyio.move_on_after(timeout):
                    try:
                        reply = await host(client, model, json.loads(json.dumps(scenario["request"])))
                    except Exception:
                        reply = None  # a host that raised stopped without a reply
                    finished = True
        finally:
            recorder.write("close", reason="judge", active=_active_jobs(session))
            session.close()
            bridge.close()
        timeline, connections = read_timeline(server_log, model_log)
        return Run(
            scenario_id=scenario["id"], wording=wording, timeline=timeline, connections=connections,
            host_exit=(0 if reply is not None else 1) if finished else None,
            host_stdout=json.dumps(reply, ensure_ascii=False) if reply is not None else "", host_stderr="",
            seconds=time.monotonic() - started,
        )  # fmt: skip


def scenario_by_id(ident: str) -> dict[str, Any]:
    for path in catalogue_paths():
        scenario = load_scenario(path)
        if scenario["id"] == ident:
            return scenario
    raise KeyError(f"no scenario {ident} in the catalogue")


async def judge_in_process_async(host: HostCoroutine, scenario: dict[str, Any] | str,
                                 timeout: float = DEFAULT_TIMEOUT) -> Verdict:  # fmt: skip
    chosen = scenario_by_id(scenario) if isinstance(scenario, str) else scenario
    return verdict_of(chosen, [(wording, await run_in_process(host, chosen, wording, timeout))
                               for wording in wordings_of(chosen)])  # fmt: skip


def judge_in_process(host: HostCoroutine, scenario: dict[str, Any] | str, timeout: float = DEFAULT_TIMEOUT) -> Verdict:
    """Run ``host`` on one scenario (a catalogue ID or a scenario object) and judge it."""
    result: list[Verdict] = []

    async def main() -> None:
        result.append(await judge_in_process_async(host, scenario, timeout))

    anyio.run(main)
    return result[0]
