"""A broken host: after a repair or data task it still submits with the first task's stepToken.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-007 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class StaleTokenHost(Host):
    def accept_arguments(self, task: dict[str, Any], candidate_text: str) -> dict[str, Any]:
        first = self.tasks_seen[0]
        return {"jobId": first["jobId"], "stepToken": first["stepToken"], "candidateText": candidate_text}


if __name__ == "__main__":
    sys.exit(main(StaleTokenHost))
