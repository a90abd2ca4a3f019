"""What the runner drives: the target interface, one module per kind, and their transports.

What lives here: the Target / Run / Session interface every kind implements (``base``); the
kinds (the MCP server over stdio or streamable HTTP, the JSON-lines harness, the reference in
process) with the client transports they speak and the zygote that forks the bundled
server; ``registry``, where every kind declares itself and a target spec is parsed once,
and ``options``, the one flag set every command that takes a target reads it from.

What it may import: ``intentref.suite.usage`` and the layers below the suite; ``registry``
alone also reaches ``intentref.suite.alterations`` (the bundled variant and faulty kinds).
"""
