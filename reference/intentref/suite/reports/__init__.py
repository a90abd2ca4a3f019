"""What a run tells its reader: one report model, and one renderer per format.

Conformance, matrix and host runs are each turned into the same model, which is rendered to
the console, JSON, JUnit, HTML and Markdown by one renderer each; ``changes`` compares two
conformance JSON reports.

What it may import: ``cases``, ``targets.base`` and the layers below the suite.
"""
