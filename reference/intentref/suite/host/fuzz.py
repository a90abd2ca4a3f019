"""``intentref host --fuzz``: random scenarios for a host, drawn reproducibly with Hypothesis.

A scenario is drawn as a *plan* — the instance and request, and per stage how many invalid
candidates the model gives, whether one is over the size budget, and how the stage ends
(a good candidate, a refusal, an incomplete output, a failure) — plus at most one
protocol-layer fault and the wordings.  ``scenario_of`` turns a plan into an ordinary
scenario (the model's script and the outcome the reference host reaches, D-HST-009, come
from walking the plan as that host walks it), so a failure is replayed with
``intentref host --scenario FILE``.  ``shrink`` simplifies a failing plan step by step,
keeping a step only while the host still breaks a rule it broke before.
"""

from __future__ import annotations

import json
import pathlib
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from intentref.suite.host.judge import (
    FAILING_LEVELS,
    ScenarioVerdict,
    fork_server,
    judge_scenario,
    judge_scenarios,
    never_ran,
    violation_line,
)

ORDER_CORE: Final = {
    "normalizedInput": "查询订单 000123。", "primaryIntent": "查询订单 000123", "requirements": [], "prohibitions": [],
    "intents": [{"action": "query", "target": "订单 000123", "requirements": [],
                 "blockers": {"clarificationReason": None, "questions": [], "confirmationReason": None,
                              "conditionReason": None}}],
}  # fmt: skip
ORDER_DATA: Final = {
    "data": {"orderId": "000123"},
    "evidence": [{"path": "/data/orderId", "mode": "exact", "sources": [{"sourceId": "input", "quote": "000123"}]}],
    "descriptionChecks": [{"path": "/data/orderId", "verdict": "satisfied", "explanation": "输入明确提供精确订单编号。",
                           "sources": [{"sourceId": "input", "quote": "000123"}]}],
    "fieldResults": [{"path": "/data/orderId", "status": "extracted", "explanation": "输入明确提供编号。"}],
    "issues": [],
}  # fmt: skip
GOOD: Final = {"core": ORDER_CORE, "data": ORDER_DATA}
# Invalid candidates, each answered with a repair task while attempts remain.
BAD: Final = {
    "core": [{"answer": {k: v for k, v in ORDER_CORE.items() if k != "prohibitions"}}, {"answerText": "not json"}],
    "data": [{"answer": {"data": {"orderId": "000123"}}}, {"answerText": "{\"data\":"}],
}
# instance -> (repairAttempts, has a data stage) in conformance/instances.json
INSTANCES: Final = {"order": (1, True), "tworepairs": (2, True), "norepair": (0, True), "default": (1, False)}
OVER_BUDGET_BYTES: Final = 1_100_000  # beyond the core's 1 MiB candidate cap
ENDINGS: Final = ("ok", "refuse", "incomplete", "fail")


# --------------------------------------------------------------------------- drawing plans


def _stage_plan(r: random.Random, attempts: int) -> dict[str, Any]:
    # Half the stages take no repair, a third some within repairAttempts, the rest one too many.
    roll = r.random()
    count = 0 if roll < 0.5 else (r.randint(1, attempts) if roll < 0.85 and attempts else attempts + 1)
    invalid = [r.randrange(2) for _ in range(count)]  # indexes into BAD
    return {
        "invalid": invalid,
        "overBudgetAt": r.randint(0, len(invalid)) if r.random() < 0.25 else None,
        "ending": r.choices(ENDINGS, weights=(50, 20, 15, 15))[0],
        "reasonBytes": r.choice([0, 12, 2046, 2049, 3000]),
    }


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    # Hypothesis draws one Random, seeded from its own reproducible choices; the plan's
    # proportions come from it, so refusals, repairs and faults turn up as often as meant
    # (Hypothesis's own draws lean towards the first and the extreme values).
    r = draw(st.randoms(use_true_random=True))
    instance = r.choice(sorted(INSTANCES))
    attempts, has_data = INSTANCES[instance]
    fields_empty = instance == "order" and r.random() < 0.3
    stages = ["core"] + (["data"] if has_data and not fields_empty else [])
    context = [[r.choice(["user", "assistant"]), r.choice(["我想查订单", "请提供编号", "好的"])] for _ in range(r.randint(0, 2))]
    # One scenario in five has a fault: a fault ends the run where it strikes, and the rest
    # of the plan must be reached often enough to be tested.
    fault = [r.randint(1, 8), r.choice(["jsonrpc_error", "not_a_reply"])] if r.random() < 0.2 else None
    return {
        "instance": instance,
        "fieldsEmpty": fields_empty,
        "context": context,
        "stages": {stage: _stage_plan(r, attempts) for stage in stages},
        "fault": fault,
        "wordings": r.choices(["reference", "alternate", "both"], weights=(40, 20, 40))[0],
    }


def draw_plans(seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` plans, the same for the same seed (and Hypothesis version)."""
    drawn: list[dict[str, Any]] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(plans())
    def collect(plan: dict[str, Any]) -> None:
        drawn.append(plan)

    collect()
    return drawn[:count]


# --------------------------------------------------------------------------- plan -> scenario


def _reason(size: int) -> Any:
    if size <= 0:
        return "不处理"
    return {"repeat": "中", "times": max(1, size // 3 + (1 if size % 3 else 0))}


def scenario_of(plan: dict[str, Any], ident: str) -> dict[str, Any]:
    """The scenario a plan stands for: the model's script, and the reference host's outcome."""
    attempts, _ = INSTANCES[plan["instance"]]
    fault_call, fault_kind = plan["fault"] if plan["fault"] else (None, None)
    model: list[dict[str, Any]] = []
    calls = 0

    def call() -> bool:
        """One more tool call; True when the fault replaces its reply."""
        nonlocal calls
        calls += 1
        return calls == fault_call

    def walk() -> dict[str, Any]:
        if call():  # prepare
            return {"outcome": "no reply"}
        for stage, stage_plan in plan["stages"].items():
            steps: list[dict[str, Any]] = [dict(BAD[stage][i]) for i in stage_plan["invalid"]]
            if stage_plan["overBudgetAt"] is not None:
                steps.insert(min(stage_plan["overBudgetAt"], len(steps)), {"answer": GOOD[stage], "padTo": OVER_BUDGET_BYTES})
            repairs = 0
            for step in steps:
                model.append(step)
                if call():  # the accept; the reference host then cancels (one more call) and stops
                    call()
                    return {"outcome": "no reply"}
                if "padTo" in step:
                    continue  # LIMIT_EXCEEDED, the job kept: the model runs again on the same task
                repairs += 1
                if repairs > attempts:
                    return {"outcome": "error", "code": "MODEL_OUTPUT_INVALID"}
            ending = stage_plan["ending"]
            if ending == "ok":
                model.append({"answer": GOOD[stage]})
                if call():
                    call()
                    return {"outcome": "no reply"}
                continue
            if ending == "fail":
                model.append({"fail": 1})
                call()  # the cancel
                return {"outcome": "no reply"}
            key = "refuse" if ending == "refuse" else "incomplete"
            model.append({key: _reason(stage_plan["reasonBytes"])})
            if call():  # the cancel itself faulted: the reference host tries once more, then stops
                call()
                return {"outcome": "no reply"}
            return {"outcome": "error", "code": "MODEL_REFUSED" if ending == "refuse" else "MODEL_OUTPUT_INCOMPLETE"}
        return {"outcome": "result"}

    expect = walk()
    request: dict[str, Any] = {"instance": plan["instance"], "input": "查询订单 000123"}
    if plan["fieldsEmpty"]:
        request["fields"] = []
    if plan["context"]:
        request["context"] = [{"role": role, "content": text} for role, text in plan["context"]]
    faults = [{"call": fault_call, "kind": fault_kind}] if fault_call else []
    return {
        "id": ident,
        "title": describe(plan),
        "level": "normative",
        "requirements": [],
        "decisions": ["D-HST-009"],
        "request": request,
        "model": model,
        "server": {"wordings": plan["wordings"], "faults": faults},
        "expect": expect,
    }


def shrunk_scenario(plan: dict[str, Any], ident: str, origin: str, rules: set[str]) -> dict[str, Any]:
    """The scenario a shrunk plan stands for, saying where it came from and which rules it
    catches: its own title (of the shrunk plan), its id as printed, the rules as requirements
    and decisions (issue 38)."""
    scenario = scenario_of(plan, ident)
    scenario["title"] = f"{describe(plan)} (shrunk from {origin})"
    scenario["requirements"] = sorted(rule for rule in rules if rule.startswith("R-"))
    scenario["decisions"] = sorted({*scenario["decisions"], *(rule for rule in rules if rule.startswith("D-"))})
    return scenario


def describe(plan: dict[str, Any]) -> str:
    parts = [f"instance {plan['instance']}"]
    for stage, stage_plan in plan["stages"].items():
        extra = " +over-budget" if stage_plan["overBudgetAt"] is not None else ""
        parts.append(f"{stage}: {len(stage_plan['invalid'])} invalid{extra}, then {stage_plan['ending']}")
    if plan["fault"]:
        parts.append(f"{plan['fault'][1]} at call {plan['fault'][0]}")
    parts.append(f"wording {plan['wordings']}")
    return "fuzz: " + "; ".join(parts)


# --------------------------------------------------------------------------- shrinking


def simpler(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Plans one step simpler than ``plan``, the likeliest to keep a failure first."""
    out: list[dict[str, Any]] = []

    def variant(change: Callable[[dict[str, Any]], object]) -> None:
        copy = json.loads(json.dumps(plan))
        change(copy)
        if copy != plan:
            out.append(copy)

    variant(lambda p: p.update(fault=None))
    variant(lambda p: p.update(wordings="reference"))
    variant(lambda p: p.update(context=[]))
    for stage in plan["stages"]:
        for member, simplest in (("overBudgetAt", None), ("ending", "ok")):
            variant(lambda p, s=stage, m=member, v=simplest: p["stages"][s].update({m: v}))  # type: ignore[misc]
        variant(lambda p, s=stage: p["stages"][s].update(invalid=p["stages"][s]["invalid"][:-1]))  # type: ignore[misc]
        shorter = 12 if plan["stages"][stage]["reasonBytes"] > 12 else 0
        variant(lambda p, s=stage, n=shorter: p["stages"][s].update(reasonBytes=n))  # type: ignore[misc]
    if "data" in plan["stages"] and plan["instance"] == "order":
        variant(lambda p: (p["stages"].pop("data"), p.update(fieldsEmpty=True)))
    return out


def broken_rules(verdict: ScenarioVerdict, level: str) -> set[str]:
    return {v.rule for _, v in verdict.violations if v.level in FAILING_LEVELS[level]}


def shrink(argv: Sequence[str], plan: dict[str, Any], rules: set[str], ident: str, *, level: str,
           timeout: float, budget: int = 30, fork_socket: str | None = None,
           http: bool = False) -> dict[str, Any]:  # fmt: skip
    """The simplest plan found, within ``budget`` runs, on which the host still breaks one of ``rules``."""
    runs = 0
    improved = True
    while improved and runs < budget:
        improved = False
        current = scenario_of(plan, ident)
        for candidate in simpler(plan):
            if runs >= budget:
                break
            if scenario_of(candidate, ident) == current:
                continue  # simpler on paper, the same scenario in fact (a stage never reached, say)
            runs += 1
            verdict = judge_scenario(argv, scenario_of(candidate, ident), timeout, fork_socket, http)
            if broken_rules(verdict, level) & rules:
                plan, improved = candidate, True
                break
    return plan


# --------------------------------------------------------------------------- the command


def run_fuzz(argv: Sequence[str], *, seed: int, count: int, out: pathlib.Path, level: str, timeout: float,
             jobs: int = 2, http: bool = False) -> int:  # fmt: skip
    with fork_server() as fork_socket:
        return _run_fuzz(argv, seed=seed, count=count, out=out, level=level, timeout=timeout, jobs=jobs,
                         fork_socket=fork_socket, http=http)  # fmt: skip


def _run_fuzz(argv: Sequence[str], *, seed: int, count: int, out: pathlib.Path, level: str, timeout: float,
              jobs: int, fork_socket: str | None, http: bool) -> int:  # fmt: skip
    drawn = draw_plans(seed, count)
    scenarios = [scenario_of(plan, f"FUZZ-{seed}-{i + 1}") for i, plan in enumerate(drawn)]
    verdicts = judge_scenarios(argv, scenarios, jobs=jobs, timeout=timeout, fork_socket=fork_socket, http=http)
    if (line := never_ran(verdicts)) is not None:
        print(f"intentref host: {line}", file=sys.stderr)
        return 3  # the host cannot run: the status of a target that could not start
    failing = [(plan, verdict) for plan, verdict in zip(drawn, verdicts, strict=True) if verdict.failed(level)]
    for _, verdict in failing:
        for wording, violation in verdict.violations:
            if violation.level != "reference" or level == "reference":
                print(violation_line(verdict, wording, violation))
    print(f"{len(verdicts) - len(failing)} of {len(verdicts)} drawn scenarios pass at {level} level (seed {seed})")
    if not failing:
        return 0
    plan, verdict = failing[0]
    ident = f"{verdict.id}-shrunk"
    rules = broken_rules(verdict, level)
    smallest = shrink(argv, plan, rules, ident, level=level, timeout=timeout, fork_socket=fork_socket, http=http)
    path = out / f"host-fuzz-seed{seed}.json"
    path.write_text(json.dumps(shrunk_scenario(smallest, ident, verdict.id, rules), ensure_ascii=False, indent=2)
                    + "\n", "utf-8")  # fmt: skip
    print(f"shrunk {verdict.id} to {ident} in {path}; replay it with: intentref host --command ... --scenario {path}")
    sys.stdout.flush()
    return 1
