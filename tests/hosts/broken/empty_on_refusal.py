"""A broken host: when its model refuses it submits an empty string instead of cancelling.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-004 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Answer, Host, main


class EmptyOnRefusalHost(Host):
    async def declined(self, task: dict[str, Any], answer: Answer) -> dict[str, Any]:
        if answer.status == 3:
            return await self.call("intent_accept", self.accept_arguments(task, ""))
        return await super().declined(task, answer)


if __name__ == "__main__":
    sys.exit(main(EmptyOnRefusalHost))
