"""The property engine: driving any target from properties, and reading its replies.

What lives here: examples and shared runs against a target, differential checks against the
reference, the normative projection of a reply (which differences the seeds fix), and the
call-campaign model that fuzz replay and properties share.

What it may import: ``generators``, ``cases``, ``targets``, ``execution`` and the layers below
the suite.
"""
