"""Running a selection of cases: the plan, the runner, the one pool of worker processes.

What lives here: which run each case goes to (``plan``, D-CNF-050), executing a plan against a
target in this process (``runner``), the worker processes every command's parallel work is
spread over (``pool`` starts them, for every command; ``workers`` deals a plan's units to
them in fair shares, D-CNF-054) and how many CPUs this process may use (``cpus``).

What it may import: ``targets``, ``cases``, ``alterations``, ``usage`` and the layers below
the suite.
"""
