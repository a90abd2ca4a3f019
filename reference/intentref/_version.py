"""The package's version, in a module of its own so that any layer may read it.

The MCP server reports it in its handshake; importing it from the package root would tie
``intentref.mcp.server`` and the root (which re-exports the server) into a circle.
"""

__version__ = "0.1.0"
