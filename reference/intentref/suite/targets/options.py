"""The target flags of every command that runs a target, read once into a ``TargetSpec``.

    --in-process | --stdio COMMAND | --http URL | --http-reference | --harness COMMAND
    | --python MODULE:ATTR | --target SPEC        [--era auto|2026|legacy|both] [--header "NAME: VALUE" ...]

``intentref conformance``, ``properties`` and ``fuzz --replay`` take them alike: one flag
per target kind that declares one (``registry.TARGET_KINDS``), ``--target`` for any kind,
the same default target, and the era carried by the spec itself to wherever the target is
built (a worker process, a pytest child), never through the environment (D-CNF-052).
``--header`` and ``$INTENTREF_HEADERS`` give what an HTTP server requires on every request
(a token, D-CNF-067); they travel in the spec too, and only a pytest child, which is given its
target on a command line, reads them from its environment.
``--era both`` (not for fuzz replay) is a run per era, each spec pinned to its era (D-CNF-070).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from intentref.suite.targets.registry import DEFAULT_TIMEOUT, ERAS, TARGET_KINDS, TargetSpec, parse
from intentref.suite.usage import HEADERS_VARIABLE, UsageError

# spec: D-CNF-057 -- every command's target when no flag names one: the bundled server, over real stdio.
DEFAULT_TARGET: Final = "reference"
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token
_HEADER_VALUE: Final = re.compile(r"[\t\x20-\x7e]+")  # visible ASCII: no line break can slip in
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
    add_header_argument(targets)


def add_header_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--header "NAME: VALUE"``, repeatable, for an ``http:`` target that requires it (D-CNF-067)."""
    parser.add_argument("--header", action="append", default=[], metavar='"NAME: VALUE"',
                        help="send this header on every request to an http: target (repeatable), e.g. "
                             f'"Authorization: Bearer TOKEN"; ${HEADERS_VARIABLE} holds more, one a line, '
                             "so a secret need not be on the command line")  # fmt: skip


def request_headers(given: Sequence[str] = (), environ: Mapping[str, str] = os.environ) -> tuple[tuple[str, str], ...]:
    """The headers of ``$INTENTREF_HEADERS`` and then ``given`` (a later one replaces an earlier of its name).

    A malformed one is a ``UsageError`` that names where it came from and never shows it: it
    may be a secret pasted on the wrong line (D-CNF-067).
    """
    lines = [(HEADERS_VARIABLE, line) for line in environ.get(HEADERS_VARIABLE, "").splitlines() if line.strip()]
    found: dict[str, tuple[str, str]] = {}
    for source, text in [*lines, *(("--header", text) for text in given)]:
        name, colon, value = (part.strip() for part in text.partition(":"))
        if not (colon and _HEADER_NAME.fullmatch(name) and _HEADER_VALUE.fullmatch(value)):
            raise UsageError(f'{source}: write NAME: VALUE, e.g. "Authorization: Bearer TOKEN" '
                             "(what was given is not shown: it may be a secret)")  # fmt: skip
        found[name.lower()] = (name, value)
    return tuple(found.values())


def header_lines(headers: Sequence[tuple[str, str]]) -> str:
    """``headers`` as ``$INTENTREF_HEADERS`` holds them, for a child process's environment."""
    return "".join(f"{name}: {value}\n" for name, value in headers)


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
    spec = parse(_spec_text(args), eras_of(args.era)[0], timeout, cold_start)
    if args.header and spec.kind != "http":
        raise UsageError(f"--header goes with a server already listening (--http URL), not with {spec.kind}")
    return replace(spec, headers=request_headers(args.header))


def spec_in_child(text: str, era: str, timeout: float) -> TargetSpec:
    """A spec given on a pytest run's command line, its headers from ``$INTENTREF_HEADERS`` (D-CNF-067)."""
    return replace(parse(text, era, timeout), headers=request_headers())


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
