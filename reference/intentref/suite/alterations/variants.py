"""Decision variants: the reference run with alternative decisions, to prove the cases' levels.

Each variant is an ``Alteration`` that takes one or more decisions (``spec/decisions*.md``)
another way the seeds also allow.  ``intentref levels`` and ``tests/conformance/test_levels.py``
require (D-CNF-040) every normative case to pass against every variant and all of them
combined, and every reference case to fail under a variant of a decision it cites.  A variant
is an in-process target (``variant:NAME``, or ``variant:all`` for the combined one).
"""

from __future__ import annotations

from intentref.suite.alterations.alteration import Alteration, AlteredTarget

# --------------------------------------------------------------------------- the catalogue


def catalogue() -> dict[str, Alteration]:
    """Every named variant, in a stable order."""
    from intentref.suite.alterations import _variants_boundary, _variants_bridge, _variants_core

    found: dict[str, Alteration] = {}
    for module in (_variants_boundary, _variants_core, _variants_bridge):
        for variant in module.VARIANTS:
            if variant.name in found:
                raise ValueError(f"two decision variants are named {variant.name!r}")
            found[variant.name] = variant
    return found


# Variants that cannot be combined with the others (they take the same decision another
# way, e.g. smaller and larger limits): the combined target leaves out every name listed
# here but the first of each group.
def combined() -> tuple[Alteration, ...]:
    """One variant per decision: every variant that does not clash with an earlier one."""
    chosen_variants: list[Alteration] = []
    taken: set[str] = set()
    for variant in catalogue().values():
        if taken.intersection(variant.decisions):
            continue
        chosen_variants.append(variant)
        taken.update(variant.decisions)
    return tuple(chosen_variants)


def target(name: str, *, envelope: bool = False) -> AlteredTarget:
    """The target ``variant:NAME``; ``all`` is every non-clashing variant at once."""
    if name == "all":
        return AlteredTarget(combined(), name="variant:all", envelope=envelope)
    variants = catalogue()
    if name not in variants:
        raise KeyError(f"no decision variant {name!r}; known: all, {', '.join(variants)}")
    return AlteredTarget([variants[name]], envelope=envelope)
