"""Hypothesis strategies for the protocol, by domain: the engine behind ``intentref.strategies``.

The public ``intentref.strategies`` module re-exports strategies only; the fuzz cases and the
property engine draw from the same generators, written once.

What it may import: ``cases``, ``targets`` and the layers below the suite.
"""
