"""The conformance suite's old public path, kept for the pytest plugin users name.

The suite itself lives in ``intentref.suite`` since issue 18.  This package
keeps ``intentref.conformance.pytest_plugin`` — the ``pytest11`` entry point and the
``-p intentref.conformance.pytest_plugin`` other projects write — working unchanged.
Nothing else lives here; it imports only ``intentref.suite``.
"""
