"""What a run tells its reader: one report model, and one renderer per format.

Conformance, matrix and host runs are each turned into the same model, which is rendered to
the console, JSON, JUnit and HTML by one renderer each.

What it may import: ``cases``, ``targets.base`` and the layers below the suite.
"""
