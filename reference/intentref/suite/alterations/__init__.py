"""The reference with something changed: decision variants and faults, in one catalogue.

A decision variant takes a decision the seeds leave open another way the seeds also allow:
every normative case must still pass under it, and every reference case must fail under a
variant of a decision it cites (D-CNF-040). A fault breaks one rule on purpose: some case
must catch it (D-CNF-033). Both are alterations of the same reference, run in process.

What it may import: ``targets.base``, ``cases`` and the layers below the suite.
"""
