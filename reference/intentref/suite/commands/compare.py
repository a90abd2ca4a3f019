"""``intentref compare``: what changed between two conformance JSON reports (issue 39).

Lists regressions (passed → failed or errored), fixes, newly unsupported cases, cases no
longer unsupported, cases whose failure changed kind, and cases added to or removed from the
suite (D-CNF-060).  Exit status: 1 when a case regressed, 0 otherwise (whatever else
changed), 2 for a usage error (a file that is not a report), in one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Final

EXIT_OK: Final = 0
EXIT_REGRESSED: Final = 1
EXIT_USAGE: Final = 2


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help="what changed between two conformance JSON reports; exit 1 on a regression",
                       description=(__doc__ or "").splitlines()[0],
                       epilog="exit status: 0 no regression, 1 a case regressed, 2 a usage error",
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("old", metavar="OLD.json", help="the baseline report (e.g. the main branch's)")
    p.add_argument("new", metavar="NEW.json", help="the report to judge against it")
    p.add_argument("--markdown", metavar="FILE", help="also write the changes as Markdown")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from intentref.suite.reports import changes, markdown, output

    try:
        if args.markdown and (problem := output.output_problem(args.markdown)):
            raise changes.NotAReport(f"--markdown {args.markdown}: {problem}")
        found = changes.between(changes.load(args.old), changes.load(args.new))
    except changes.NotAReport as exc:
        print(f"intentref compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(found.lines()))
    text = "\n".join(found.markdown()).rstrip("\n") + "\n"
    if args.markdown:
        markdown.write_markdown(args.markdown, text)
    markdown.append_step_summary(text)
    return EXIT_REGRESSED if found.regressions else EXIT_OK
