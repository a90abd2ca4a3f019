"""Hypothesis strategies for the protocol, by domain: the engine behind ``intentref.strategies``.

One module per domain: ``draw`` (one small Draw interface, run as Hypothesis draws or from a
seeded ``random.Random``), ``texts``, ``schemas``, ``requests``, ``candidates``, ``faults`` (the
named ways to break a candidate), ``replies`` (malformed replies and tool results),
``catalog`` (the instances they draw for) and ``reference_replies``. The public
``intentref.strategies`` module re-exports strategies only; the fuzz cases and the property
engine draw from the same generators, written once.

What it may import: ``cases``, ``targets`` and the layers below the suite.
"""
