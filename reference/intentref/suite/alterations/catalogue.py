"""Every alteration of the reference, by name: the decision variants and the faults in one list.

Both kinds are ``alteration.Alteration`` records; this is the one place that lists them
together, so that a name means one thing whichever command is given it, and that a tool
can tell the two kinds apart by what they touch (``decisions`` against ``breaks``).
"""

from __future__ import annotations

from intentref.suite.alterations import faulty, variants
from intentref.suite.alterations.alteration import Alteration


def alterations() -> dict[str, Alteration]:
    """Every decision variant, then every fault; no two share a name."""
    found: dict[str, Alteration] = dict(variants.catalogue())
    for name, fault in faulty.FAULTS.items():
        if name in found:
            raise ValueError(f"a decision variant and a fault are both named {name!r}")
        found[name] = fault
    return found
