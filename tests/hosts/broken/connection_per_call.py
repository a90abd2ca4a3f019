"""A broken host: it opens a new connection (a new server) for every call, carrying tokens across connections.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-005 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from mcp import Client, StdioServerParameters
from python_host import Host, main


class ConnectionPerCallHost(Host):
    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async with Client(StdioServerParameters(command=self.server[0], args=self.server[1:])) as client:
            self.client = client
            return await super().call(tool, arguments)

    async def main(self) -> dict[str, Any] | None:
        return await self.loop()


if __name__ == "__main__":
    sys.exit(main(ConnectionPerCallHost))
