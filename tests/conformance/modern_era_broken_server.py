"""The bundled server behind a pipe that breaks it in the 2026-07-28 era only.

    python modern_era_broken_server.py --config FILE

Run as an outside command by ``test_era_both.py``; it is no implementation of anything.  A
connection that opens with ``initialize`` (the handshake era) passes through unchanged; on
any other (the 2026-07-28 era) every reply reads ``"stage": "data"`` where the server wrote
``"stage": "core"``, so a case expecting a core task fails in that era alone (D-CNF-072).
"""

import subprocess
import sys
import threading

server = subprocess.Popen([sys.executable, "-m", "intentref.mcp.cli", *sys.argv[1:]],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
handshake = threading.Event()
first_line = threading.Event()


def client_to_server() -> None:
    assert server.stdin is not None
    for line in sys.stdin.buffer:
        if not first_line.is_set():
            if b'"initialize"' in line:
                handshake.set()
            first_line.set()
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()


threading.Thread(target=client_to_server, daemon=True).start()
assert server.stdout is not None
for reply in server.stdout:
    if not handshake.is_set():
        reply = reply.replace(b'"stage":"core"', b'"stage":"data"').replace(b'"stage": "core"', b'"stage": "data"')
    sys.stdout.buffer.write(reply)
    sys.stdout.buffer.flush()
sys.exit(server.wait())
