"""The conformance suite runner: fixtures, matchers, targets, reports."""
