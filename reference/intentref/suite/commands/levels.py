"""``intentref levels``: prove every case's level against the decision variants (D-CNF-040).

For each decision variant (``intentref.suite.alterations.variants``) and for all of them combined,
the whole suite runs in process.  The proof holds when

* no variant fails a normative case (a normative case that fails under a variant rests on
  the decision that variant changes: it is mis-levelled);
* every reference case is broken by at least one variant of a decision it cites: it fails,
  or it is unsupported because the variant lacks a capability the case needs.  A reference
  case that no variant of its decisions breaks is mis-cited;
* every decision a reference case cites has a variant.

It prints one table (decision, variant, normative failures, reference cases broken) and the
problems, and exits 0 only when the proof holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


@dataclass
class VariantResult:
    name: str
    decisions: tuple[str, ...]
    summary: str
    normative_failed: list[str] = field(default_factory=list)  # "ID: first mismatch"
    normative_unsupported: dict[str, str] = field(default_factory=dict)
    reference_broken: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class Proof:
    variants: list[VariantResult]
    combined: VariantResult
    unbroken_reference: list[str]  # reference cases no variant of their decisions breaks
    decisions_without_variant: dict[str, list[str]]  # decision -> reference cases citing it
    normative_cases: int
    reference_cases: int

    def problems(self) -> list[str]:
        """Every reason the proof fails, one stable key each (what a known-problems list holds)."""
        keys = [f"normative {line.split(':')[0]} fails under {v.name}"
                for v in [*self.variants, self.combined] for line in v.normative_failed]  # fmt: skip
        keys += [f"reference {case_id} is broken by no variant of its decisions" for case_id in self.unbroken_reference]
        keys += [f"decision {d} has no variant" for d in self.decisions_without_variant]
        return keys

    @property
    def holds(self) -> bool:
        return (not any(v.normative_failed for v in [*self.variants, self.combined])
                and not self.unbroken_reference and not self.decisions_without_variant)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        def one(v: VariantResult) -> dict[str, Any]:
            return {"name": v.name, "decisions": list(v.decisions), "summary": v.summary,
                    "normativeFailed": v.normative_failed, "normativeUnsupported": v.normative_unsupported,
                    "referenceBroken": v.reference_broken, "seconds": round(v.seconds, 3)}  # fmt: skip

        return {"holds": self.holds, "normativeCases": self.normative_cases, "referenceCases": self.reference_cases,
                "variants": [one(v) for v in self.variants], "combined": one(self.combined),
                "unbrokenReference": self.unbroken_reference,
                "decisionsWithoutVariant": self.decisions_without_variant}  # fmt: skip


def _breaks(outcome: Any) -> bool:
    """Failed; unsupported for a capability the variant lacks (D-CNF-030), not for options; or
    errored because the variant refused a configuration the case builds (a definition the
    reference accepts and the variant, deciding otherwise, does not)."""
    from intentref.suite.cases.script import ERRORED, FAILED, UNSUPPORTED

    lacked = outcome.detail.startswith("needs ") and not outcome.detail.startswith("needs Bridge option")
    refused = outcome.detail.startswith("the target refused the configuration")
    return bool(outcome.outcome == FAILED or (outcome.outcome == UNSUPPORTED and lacked)
                or (outcome.outcome == ERRORED and refused))  # fmt: skip


def _result(name: str, cases: list[Any], outcomes: dict[str, Any], seconds: float) -> VariantResult:
    """What the variant ``name`` did to ``cases``: normative failures, reference cases broken."""
    from intentref.suite.alterations import variants
    from intentref.suite.cases.script import ERRORED, FAILED, UNSUPPORTED

    taken = variants.target(name).alterations
    result = VariantResult(name, tuple(d for v in taken for d in v.decisions), "; ".join(v.summary for v in taken))
    for case in cases:
        outcome = outcomes[case.id]
        if case.level == "normative":
            if outcome.outcome in (FAILED, ERRORED):
                first = str(outcome.mismatches[0]) if outcome.mismatches else outcome.detail
                result.normative_failed.append(f"{case.id}: {first}")
            elif outcome.outcome == UNSUPPORTED:
                result.normative_unsupported[case.id] = outcome.detail
        elif _breaks(outcome):
            result.reference_broken.append(case.id)
    result.seconds = seconds
    return result


def _run_variants(wanted: dict[str, list[Any]], instances: dict[str, Any], jobs: int | None) -> list[VariantResult]:
    """Every variant over its cases, in one pool of worker processes (D-CNF-054): the envelope
    cases through the reference's MCP tool layer (``variant-envelope:``), the rest directly."""
    from intentref.suite.execution import workers
    from intentref.suite.targets import registry

    works: list[workers.Work] = []
    for name, cases in wanted.items():
        for kind, part in (("variant", [c for c in cases if c.transport != "mcp"]),
                           ("variant-envelope", [c for c in cases if c.transport == "mcp"])):  # fmt: skip
            if part:
                works.append(workers.Work(f"{kind}:{name}", registry.parse(f"{kind}:{name}"), part, instances=instances))
    workers.plan_work(works)
    workers.run_works(works, jobs or workers.default_jobs())
    results = []
    for name, cases in wanted.items():
        mine = [work for work in works if work.key.split(":", 1)[1] == name]
        outcomes = {work.cases[index].id: outcome for work in mine for index, outcome in work.outcomes.items()}
        results.append(_result(name, cases, outcomes, sum(work.seconds for work in mine)))
    return results


def prove(cases: Iterable[Any] | None = None, only_variants: Sequence[str] = (), jobs: int | None = None) -> Proof:
    """Run every case against every variant (or the named ones) and the combined variant.

    ``jobs``: worker processes (default: the CPUs this process may use).
    """
    from intentref.suite.alterations import variants as catalogue_module
    from intentref.suite.cases.fixtures import load_cases
    from intentref.suite.targets.base import load_instances

    selected = list(load_cases() if cases is None else cases)
    instances = load_instances()  # read once for every run of the proof
    catalogue = catalogue_module.catalogue()
    variants_of: dict[str, set[str]] = {}  # decision -> the variants that take it another way
    for variant in catalogue.values():
        for decision in variant.decisions:
            variants_of.setdefault(decision, set()).add(variant.name)
    names = list(only_variants) or list(catalogue)
    wanted: dict[str, list[Any]] = {}
    for name in names:
        # A variant runs every normative case, and the reference cases citing its decisions.
        mine = set(catalogue[name].decisions)
        wanted[name] = [c for c in selected if c.level == "normative" or mine & set(c.data.get("decisions", []))]
    wanted["all"] = [c for c in selected if c.level == "normative"]
    *results, combined = _run_variants(wanted, instances, jobs)
    broken_by: dict[str, set[str]] = {}
    for result in results:
        for case_id in result.reference_broken:
            broken_by.setdefault(case_id, set()).add(result.name)
    unbroken: list[str] = []
    without: dict[str, list[str]] = {}
    for case in selected:
        if case.level != "reference":
            continue
        cited = list(case.data.get("decisions", []))
        relevant = {name for d in cited for name in variants_of.get(d, ())}
        if not relevant:
            for decision in cited:
                without.setdefault(decision, []).append(case.id)
            continue
        if not relevant & broken_by.get(case.id, set()) and relevant <= set(names):
            unbroken.append(case.id)
    return Proof(results, combined, unbroken, without,
                 sum(c.level == "normative" for c in selected), sum(c.level == "reference" for c in selected))  # fmt: skip


def render(proof: Proof, out: Any = None) -> None:
    """The table and the problems, as plain text (rich tables when ``out`` is a terminal)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out or sys.stdout, width=140, soft_wrap=False)
    table = Table(title=f"Decision variants: {proof.normative_cases} normative, {proof.reference_cases} reference cases")
    for column in ("decision", "variant", "what it decides instead", "normative failures", "reference cases broken"):
        table.add_column(column, overflow="fold")
    for v in proof.variants:
        table.add_row(", ".join(v.decisions), v.name, v.summary, str(len(v.normative_failed)),
                      str(len(v.reference_broken)))  # fmt: skip
    c = proof.combined
    table.add_row("(all of the above)", "all", f"{len(c.decisions)} decisions at once", str(len(c.normative_failed)), "-")
    console.print(table)
    for v in [*proof.variants, c]:
        for line in v.normative_failed[:20]:
            console.print(f"normative case fails under variant {v.name}: {line}", markup=False)
        if len(v.normative_failed) > 20:
            console.print(f"  … and {len(v.normative_failed) - 20} more under {v.name}", markup=False)
    for case_id in proof.unbroken_reference:
        console.print(f"reference case {case_id} passes under every variant of the decisions it cites", markup=False)
    for decision, ids in sorted(proof.decisions_without_variant.items()):
        console.print(f"decision {decision} (cited by {len(ids)} reference cases) has no variant", markup=False)
    console.print("the levels hold" if proof.holds else "the levels do NOT hold", markup=False)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("levels", help="prove each case's level against the decision variants",
                       description=(__doc__ or "").splitlines()[0])  # fmt: skip
    p.add_argument("--variant", action="append", default=[], metavar="NAME",
                   help="only this variant (repeatable; the combined one always runs)")  # fmt: skip
    p.add_argument("--list", action="store_true", help="list the variants and the decisions they change, then stop")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the proof as JSON")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes (default: the CPUs this process may use)")  # fmt: skip
    p.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from intentref.suite.alterations import variants

    catalogue = variants.catalogue()
    unknown = [n for n in args.variant if n not in catalogue]
    if unknown:
        print(f"intentref levels: no variant {unknown[0]!r}; see --list", file=sys.stderr)
        return EXIT_USAGE
    if args.json_out:
        folder = Path(args.json_out).resolve().parent
        if not folder.is_dir():
            print(f"intentref levels: --json {args.json_out}: folder {folder} does not exist", file=sys.stderr)
            return EXIT_USAGE
    if args.list:
        for v in catalogue.values():
            print(f"{v.name}\t{', '.join(v.decisions)}\t{v.summary}")
        return EXIT_OK
    if args.jobs is not None and args.jobs < 1:
        print(f"intentref levels: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return EXIT_USAGE
    proof = prove(only_variants=args.variant, jobs=args.jobs)
    render(proof)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(proof.to_json(), indent=2, ensure_ascii=False) + "\n", "utf-8")
    return EXIT_OK if proof.holds else EXIT_PROBLEMS
