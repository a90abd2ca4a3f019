"""The intentref command: one entry point, a subcommand per job.

Subcommands import their machinery lazily so that ``intentref --help`` stays instant
and the core never depends on the MCP SDK or the terminal UI.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Final


def _schemas(args: argparse.Namespace) -> int:
    from intentref.core import models

    out = pathlib.Path(args.out)
    stale = []
    for name in models.WIRE_TYPES:
        text = json.dumps(models.json_schema(name), ensure_ascii=False, indent=2) + "\n"
        path = out / f"{name}.schema.json"
        if args.check:
            if not path.exists() or path.read_text("utf-8") != text:
                stale.append(str(path))
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")
    if stale:
        print("stale schemas (run `intentref schemas`):", *stale, sep="\n  ", file=sys.stderr)
        return 1
    return 0


def _bench(args: argparse.Namespace) -> int:
    from intentref.devtools.bench import main as bench_main

    return bench_main(smoke=args.smoke, only=args.only)


_LITERAL: Final = re.compile(r"``(.*?)``")


def plain(text: str | None) -> str | None:
    """A docstring line as --help shows it: reST literals (````x````) without their markup."""
    return None if text is None else _LITERAL.sub(r"\1", text)


def build_parser() -> argparse.ArgumentParser:
    from intentref import __version__

    parser = argparse.ArgumentParser(prog="intentref", description=plain(__doc__.splitlines()[0] if __doc__ else None))
    parser.add_argument("--version", action="version", version=f"intentref {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("schemas", help="write (or --check) the JSON Schemas of every wire type")
    p.add_argument("--out", default="spec/schemas", help="folder of the .schema.json files (default: spec/schemas)")
    p.add_argument("--check", action="store_true", help="exit 1 if a published schema differs from the models")
    p.set_defaults(run=_schemas)

    p = sub.add_parser("bench", help="run every benchmark and print its ratio against the floor or peer")
    p.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmarks run, not their figures")
    p.add_argument("--only", action="append", default=[], help="run only the named benchmark (repeatable)")
    p.set_defaults(run=_bench)

    # Each command module declares its own arguments and imports its machinery only when run,
    # so building this parser stays cheap.
    from intentref.devtools import mutation
    from intentref.suite.commands import check, compare, fuzz, host, levels, matrix
    from intentref.suite.commands import conformance as conformance_cli
    from intentref.suite.commands import properties as properties_cli

    for command in (properties_cli, fuzz, check, mutation, compare, levels, matrix, host):
        command.add_parser(sub)
    p = sub.add_parser("conformance", help="run the conformance suite against a target",
                       description=conformance_cli.__doc__.splitlines()[0] if conformance_cli.__doc__ else None)  # fmt: skip
    conformance_cli.add_arguments(p)
    for subparser in sub.choices.values():  # each module's own description, as plain text
        subparser.description = plain(subparser.description)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
