"""The conformance suite: what other implementations run against themselves.

Laid out by what a reader looks for, one subpackage per question, listed bottom up; a
subpackage may import the ones listed above it, never those below
(``tests/spec/test_layers.py`` enforces the order):

``usage``        the one error a command raises for a user's mistake on its command line.
``targets``      what the runner drives: the Target / Run / Session interface (``base``), one
                 module per kind of target (MCP over stdio or HTTP, the JSON-lines harness, the
                 reference in process) and their transports; ``registry`` where every kind
                 declares itself and a target spec is parsed once, ``options`` the one flag set
                 every command reads a target from (``registry`` alone reaches up, to
                 ``alterations``, for the bundled variant and faulty kinds, lazily).
``cases``        the fixture language: loading ``conformance/cases/*.json``, generators and
                 matchers of values, running one case's steps (and the first line of a failed
                 one), what a case needs of a target and whether it is unsupported,
                 expected-failure lists.
``alterations``  the reference with something changed: decision variants (every normative case
                 must still pass) and faults (some case must fail), one catalogue of both.
``execution``    which run each case goes to (the plan), executing it, and the one pool of
                 worker processes every command's parallel work runs on.
``reports``      one report model and one renderer per format (console, JSON, JUnit, HTML).
``generators``   Hypothesis strategies by domain, behind the public ``intentref.strategies``.
``properties``   the property engine: driving a target from properties, the differential
                 check against the reference, the normative projection of a reply, the
                 call-campaign walker, and the fuzz cases written from them.
``host``         the judge for the other side of the protocol: a host run through scenarios.
``commands``     one module per subcommand of ``intentref``: argument parsing and wiring only.

``pytest_plugin`` publishes the cases as pytest items (``intentref.conformance.pytest_plugin``).

What the suite may import from outside itself: anything below it — ``intentref.core``,
``intentref.intent``, ``intentref.bridge``, ``intentref.mcp``, ``intentref._paths``,
``intentref._version`` — never ``intentref.devtools`` or ``intentref.cli``.
"""
