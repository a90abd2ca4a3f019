"""A broken host: it cancels a refusal with outcome cancelled.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-002 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class CancelledForRefusalHost(Host):
    def cancel_outcome(self, status: int) -> str:
        return "cancelled" if status == 3 else super().cancel_outcome(status)


if __name__ == "__main__":
    sys.exit(main(CancelledForRefusalHost))
