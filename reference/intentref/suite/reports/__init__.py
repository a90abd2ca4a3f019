"""What a run tells its reader: one report model, and one renderer per format.

Conformance, matrix and host runs are each turned into the same model (``model``), which is
rendered by one renderer per format: ``console`` (the summary and live progress), ``output``
(JSON files), ``junit``, ``html``, ``markdown`` (the short summary for a CI job) and the
matrix's ``badges``; ``conformance`` holds the report schema and the entry points
``intentref conformance`` calls; ``changes`` compares two conformance JSON reports.

What it may import: ``cases``, ``targets.base`` and the layers below the suite.
"""
