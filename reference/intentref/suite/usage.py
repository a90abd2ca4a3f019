"""The one error a suite command raises for a user's mistake on its command line.

Every ``intentref`` command turns it into one plain line on stderr and exit status 2
(D-CNF-013), found before any long work starts: an option, a file, a target spec.  Beside
it, the argparse type of the ``--jobs N`` option the commands share, and the variable that
gives HTTP headers where a command line would show a secret.
"""

from __future__ import annotations

from typing import Final

# spec: D-CNF-067 -- one header a line, so a token can come from a CI secret, never a command line.
HEADERS_VARIABLE: Final = "INTENTREF_HEADERS"


class UsageError(Exception):
    """A mistake in what the user asked for; its message is the one line shown."""


def worker_count(text: str) -> int:
    """The argparse type of ``--jobs N``: a whole number of worker processes, 1 or more."""
    import argparse  # only when a command line is read

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
