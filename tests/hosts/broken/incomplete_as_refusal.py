"""A broken host: it cancels an incomplete output as a refusal.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-003 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class IncompleteAsRefusalHost(Host):
    def cancel_outcome(self, status: int) -> str:
        return "refusal"


if __name__ == "__main__":
    sys.exit(main(IncompleteAsRefusalHost))
