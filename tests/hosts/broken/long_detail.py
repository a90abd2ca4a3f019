"""A broken host: it sends the model's whole refusal reason as the cancel detail, however long.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-006 (tests/host/test_broken_hosts.py).
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class LongDetailHost(Host):
    def cancel_detail(self, text: str) -> str:
        return text


if __name__ == "__main__":
    sys.exit(main(LongDetailHost))
