"""A broken host: it recognises a size rejection by the wording of the error message.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-011 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class MessageBranchHost(Host):
    def is_size_rejection(self, reply: dict[str, Any]) -> bool:
        return reply.get("kind") == "error" and "exceeds" in reply["error"].get("message", "")


if __name__ == "__main__":
    sys.exit(main(MessageBranchHost))
