"""A broken host: on a repair task it cancels the job instead of submitting the repaired candidate.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-015 (tests/host/test_broken_hosts.py).
"""

import json
import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, ModelFailed, main


class GivesUpOnRepairHost(Host):
    async def answer(self, task: dict[str, Any]) -> dict[str, Any]:
        if "repair" not in json.loads(task["payload"]):
            return await super().answer(task)
        answer = await self.run_model(task)
        if answer.status in (3, 4):
            return await self.declined(task, answer)
        if answer.status != 0:
            raise ModelFailed(f"the model exited {answer.status}")
        # It has the repaired candidate, and throws it away.
        return await self.call("intent_cancel", {"jobId": task["jobId"], "outcome": "cancelled"})


if __name__ == "__main__":
    sys.exit(main(GivesUpOnRepairHost))
