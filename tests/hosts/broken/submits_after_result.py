"""A broken host: after a result it submits its last candidate once more.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-008 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class AfterResultHost(Host):
    last: dict[str, Any] | None = None

    def accept_arguments(self, task: dict[str, Any], candidate_text: str) -> dict[str, Any]:
        self.last = super().accept_arguments(task, candidate_text)
        return self.last

    async def loop(self) -> dict[str, Any]:
        reply = await super().loop()
        if reply["kind"] == "result" and self.last is not None:
            await self.call("intent_accept", self.last)  # "to be sure": the job has ended
        return reply


if __name__ == "__main__":
    sys.exit(main(AfterResultHost))
