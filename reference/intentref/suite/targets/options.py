"""The target flags of every command that runs a target, read once into a ``TargetSpec``.

    --in-process | --stdio COMMAND | --http URL | --http-reference | --harness COMMAND
    | --python MODULE:ATTR | --target SPEC        [--era auto|2026|legacy|both]

``intentref conformance``, ``properties`` and ``fuzz --replay`` take them alike: one flag
per target kind that declares one (``registry.TARGET_KINDS``), ``--target`` for any kind,
the same default target, and the era carried by the spec itself to wherever the target is
built (a worker process, a pytest child), never through the environment (D-CNF-052).
``--era both`` (not for fuzz replay) is a run per era, each spec pinned to its era (D-CNF-070).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Final

from intentref.suite.targets.registry import DEFAULT_TIMEOUT, ERAS, TARGET_KINDS, TargetSpec, parse

# spec: D-CNF-057 -- every command's target when no flag names one: the bundled server, over real stdio.
DEFAULT_TARGET: Final = "reference"
BOTH: Final = "both"


def eras_of(era: str) -> tuple[str, ...]:
    """The eras a run judges: each pinned in turn for ``--era both`` (D-CNF-070), else the one asked."""
    return ("2026", "legacy") if era == BOTH else (era,)


def add_target_arguments(parser: argparse.ArgumentParser, both: bool = False) -> None:
    """The target flags, in a group of their own; one of them at most.  ``both``: the command
    judges a run in each era on ``--era both`` (D-CNF-070)."""
    targets = parser.add_argument_group("target (default: the bundled reference over stdio)")
    chosen = targets.add_mutually_exclusive_group()
    for kind in TARGET_KINDS.values():
        if kind.flag is None:
            continue
        if kind.argument:
            chosen.add_argument(kind.flag, metavar=kind.argument, help=kind.summary)
        else:
            chosen.add_argument(kind.flag, action="store_true", help=kind.summary)
    chosen.add_argument("--target", metavar="SPEC",
                        help="any target by its spec, KIND or KIND:ARGUMENT (stdio:COMMAND, variant:NAME, "
                             "faulty:NAME, python:MODULE:ATTR, ...; an unknown kind is answered with the "
                             "list of all)")  # fmt: skip
    targets.add_argument("--era", choices=(*ERAS, BOTH) if both else ERAS, default="auto",
                         help="MCP era: auto (negotiated, default), 2026 (2026-07-28) or legacy (initialize "
                              "handshake)" + (", or both: a run in each, side by side (D-CNF-070)" if both else ""))  # fmt: skip


def era_specs(spec: TargetSpec, era: str) -> list[TargetSpec]:
    """The spec of each era a run judges: both pinned in turn for ``--era both`` on a target that has
    eras; ``spec`` alone otherwise, a target without MCP having no era to choose (D-CNF-070)."""
    if era != BOTH:
        return [spec]
    target = spec.build()  # nothing starts before a run opens
    try:
        has_eras = target.era_in_force() is not None
    finally:
        target.close()
    return [replace(spec, era=each) for each in eras_of(era)] if has_eras else [replace(spec, era="auto")]


def add_cold_start_argument(parser: argparse.ArgumentParser) -> None:
    """``--cold-start``, for a command whose own processes start the servers (not a pytest child)."""
    forking = ", ".join(kind.name for kind in TARGET_KINDS.values() if kind.forks_reference)
    parser.add_argument("--cold-start", action="store_true",
                        help=f"{forking}: start every server process from the console script, "
                             "not forked")  # fmt: skip


def target_from(args: argparse.Namespace, timeout: float = DEFAULT_TIMEOUT,
                cold_start: bool = False) -> TargetSpec:  # fmt: skip
    """The spec the flags name, every mistake in it raised as a one-line ``UsageError``."""
    return parse(_spec_text(args), eras_of(args.era)[0], timeout, cold_start)


def _spec_text(args: argparse.Namespace) -> str:
    if args.target:
        return str(args.target)
    for kind in TARGET_KINDS.values():
        value = getattr(args, _dest(kind.flag), None) if kind.flag is not None else None
        if value is True:
            return kind.name
        if value:
            return f"{kind.name}:{value}"
    return DEFAULT_TARGET


def _dest(flag: str) -> str:
    """Where argparse keeps a flag's value: ``--http-reference`` in ``http_reference``."""
    return flag.removeprefix("--").replace("-", "_")
