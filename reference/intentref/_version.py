"""The package's version, in a module of its own so that any layer may read it.

The MCP server reports it in its handshake; importing it from the package root would be an
arrow from the MCP layer back up to the root, which re-exports the server
(tests/spec/test_layers.py).
"""

__version__ = "0.1.0"
