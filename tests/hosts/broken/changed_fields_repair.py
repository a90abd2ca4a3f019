"""A broken host: for a repair it submits only the fields that changed since its last candidate.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-014 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import json

from python_host import Host, main


class ChangedFieldsHost(Host):
    last_candidate: dict[str, Any] | None = None

    def accept_arguments(self, task: dict[str, Any], candidate_text: str) -> dict[str, Any]:
        try:
            candidate = json.loads(candidate_text)
        except ValueError:
            candidate = None  # not an object: nothing to diff, sent as it is
        submitted = candidate_text
        repair = "repair" in json.loads(task["payload"])
        if repair and isinstance(candidate, dict) and isinstance(self.last_candidate, dict):
            changed = {k: v for k, v in candidate.items() if self.last_candidate.get(k) != v}
            submitted = json.dumps(changed, ensure_ascii=False)
        self.last_candidate = candidate
        return {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": submitted}


if __name__ == "__main__":
    sys.exit(main(ChangedFieldsHost))
