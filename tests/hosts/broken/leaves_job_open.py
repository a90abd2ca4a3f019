"""A broken host: when its model fails it neither cancels nor closes — a child keeps the connection open.

It is tests/hosts/python_host.py with one decision changed, to prove that `intentref host`
fails it on R-HST-013 (tests/host/test_broken_hosts.py).
"""

import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from python_host import Host, main


class LeavesJobOpenHost(Host):
    async def release(self) -> None:
        # Instead of cancelling, hand the open connection (its pipes) to a child that outlives us.
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        os._exit(1)  # and leave at once, without the SDK's orderly close of its server


if __name__ == "__main__":
    sys.exit(main(LeavesJobOpenHost))
