"""``python variant_server.py NAME --config FILE``: the reference MCP server over stdio, its Bridge a variant.

NAME is a function of ``variant_targets`` (``reworded``, ``status_priority``,
``replay_conflicts``); the server is the real ``intent-runtime-mcp`` command with the
variant's proxy around each Bridge it creates, so a variant can be judged over the real
MCP transport too (test_projection_fairness.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from intentref.mcp import cli as mcp_cli
from intentref.mcp import server as mcp_server


def main() -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    import variant_targets  # beside this file, which is no package

    factories = {"reworded": variant_targets.reworded_bridge, "status_priority": variant_targets.status_priority_bridge}
    factory = factories[sys.argv[1]]

    mcp_server.create_intent_bridge = factory  # type: ignore[assignment]
    return mcp_cli.main(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
