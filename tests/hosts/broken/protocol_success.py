"""A broken host: a protocol-layer refusal (a JSON-RPC error, a result without a BridgeReply) is taken as success.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-012 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class ProtocolSuccessHost(Host):
    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await self.client.call_tool(tool, arguments)
        except Exception:
            return {"kind": "result", "result": {}}
        return self.reply_of(result)

    def reply_of(self, result: Any) -> dict[str, Any]:
        reply = result.structured_content
        if not isinstance(reply, dict):
            return {"kind": "result", "result": {"text": result.content[0].text if result.content else ""}}
        return dict(reply)


if __name__ == "__main__":
    sys.exit(main(ProtocolSuccessHost))
