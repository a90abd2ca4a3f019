"""The ``{server}`` a host starts: hands its stdio to the judge's fork server and waits.

    python -I -S launch.py SOCKET -- FALLBACK ARGV...

Standard library only, run as a file: it starts in a few tens of milliseconds.  It passes
its stdin, stdout and stderr to the fork server on SOCKET (``forkserver``), learns the
server child's pid, forwards SIGTERM and SIGINT to it, and exits with the child's status.
When the fork server cannot be reached it becomes FALLBACK ARGV (the server started the
slow way), so a host never sees the difference.
"""

import json
import os
import signal
import socket
import sys


def main(argv: list[str]) -> int:
    split = argv.index("--")
    path, fallback = argv[0], argv[split + 1 :]
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        header = json.dumps({"argv": fallback_server_args(fallback), "cwd": os.getcwd()}).encode()
        socket.send_fds(conn, [header], [0, 1, 2])
        reader = conn.makefile("r", encoding="utf-8")
        pid = int(reader.readline())
    except (OSError, ValueError):
        os.execv(fallback[0], fallback)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _frame: os.kill(pid, received))
    # Our copies of the pipes would keep the server's stdin open after the host closes it.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    status_line = reader.readline()
    try:
        status = int(status_line)
    except ValueError:
        return 1
    return status if status >= 0 else 128 - status


def fallback_server_args(fallback: list[str]) -> list[str]:
    """The server's own arguments: what follows ``-c CODE`` in the fallback command line."""
    return fallback[fallback.index("-c") + 2 :]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
