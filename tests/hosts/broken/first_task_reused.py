"""A broken host: it gives its model the job's first task every time (the first task's instructions reused).

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-001 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class FirstTaskHost(Host):
    def model_input(self, task: dict[str, Any]) -> dict[str, Any]:
        return self.tasks_seen[0]


if __name__ == "__main__":
    sys.exit(main(FirstTaskHost))
