"""The fixture language: what a case is and how one case runs.

What lives here: loading and checking ``conformance/cases/*.json`` (``fixtures``), the
generators and matchers of values in steps and expectations (``values``), running one case's
steps against one run of a target (``script``; ``headline`` says a failed step's first
line in plain words, D-CNF-031), what a case needs of a target beyond the
seeds (``capabilities``, D-CNF-030) and expected-failure lists (``baseline``).

What it may import: ``intentref.suite.usage``, ``intentref.suite.targets.base`` (the interface
a case runs against, not the kinds of target) and the layers below the suite.
"""
