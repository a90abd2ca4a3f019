"""One module per ``intentref`` subcommand: argument parsing and wiring, no rules of its own.

Each module has ``add_parser`` and its ``main``/``run``; the work itself lives in the
subpackages below. The package top (``intentref.cli``) imports these lazily so that a command
loads only what it runs.

What it may import: every other part of the suite.
"""
