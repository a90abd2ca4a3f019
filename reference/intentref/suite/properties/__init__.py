"""The property engine: driving any target from properties, and reading its replies.

What lives here: examples and shared runs against a target (``targets``), the differential
check against the reference (``differential``), the normative projection of a reply, which
differences the seeds fix (``projection``), the call-campaign walker that properties and the
fuzz sessions share (``walker``), an example's calls written as a case (``case_writer``) and
the fuzz cases for host developers (``fuzz_cases``).

What it may import: ``generators``, ``cases``, ``targets``, ``execution`` and the layers below
the suite.
"""
