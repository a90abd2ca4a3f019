"""``intentref host``: a judge for the other side of the protocol.

A host calls the three tools and runs a model for each task.  The judge serves it the
reference Bridge through a recording proxy (``serve``), gives it a scripted model
(``model``, a stdlib-only script), runs it once per scenario (``judge``), and checks
what it did against seed 000's host rules, ``R-HST-…`` in ``spec/requirements.md``
(``rules``).  The judge's own choices are ``D-HST-…`` in ``spec/decisions-host.md``.

Layer: suite (tests/spec/test_layers.py) — it imports the MCP layer and below.
"""
