"""A broken host: it prepares the job, receives its first task and stops, running no model.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-016 (tests/host/test_broken_hosts.py): a host that reaches the server and
leaves the loop on a task is not a host that passes. Leaving its connection ends the server
it started, so the job is released (R-HST-013 holds); only the loop is broken.
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class StopsOnATaskHost(Host):
    async def loop(self) -> dict[str, Any]:
        await self.call("intent_prepare", self.request)
        raise SystemExit(1)  # out of the loop on the task, past the host's own release


if __name__ == "__main__":
    sys.exit(main(StopsOnATaskHost))
