"""The one error a suite command raises for a user's mistake on its command line.

Every ``intentref`` command turns it into one plain line on stderr and exit status 2
(D-CNF-013), found before any long work starts: an option, a file, a target spec.
"""

from __future__ import annotations


class UsageError(Exception):
    """A mistake in what the user asked for; its message is the one line shown."""
