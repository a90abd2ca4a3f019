"""Non-blocking reads and writes on raw file descriptors, for anyio code.

Shared by the server's stdio transport (``intentref.mcp.stdio``) and the conformance
runner's client transport (``intentref.suite.targets.transport``): both move JSON-RPC
lines over pipes set to O_NONBLOCK and wait on the event loop instead of a thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import Final

import anyio

logger = logging.getLogger(__name__)

# One read's worth: a whole pipe buffer on Linux, so a 10 MB line arrives in few reads,
# and small enough not to hold memory for an idle connection.
READ_CHUNK: Final = 1 << 16


async def read_chunks(fd: int, size: int = READ_CHUNK) -> AsyncIterator[bytes]:
    """Chunks of ``fd`` until end of input; a read error counts as end of input."""
    while True:
        try:
            chunk = os.read(fd, size)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        except OSError:
            logger.debug("read on fd %d failed; treating as end of input", fd, exc_info=True)
            return
        if not chunk:
            return
        yield chunk


async def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``, waiting whenever a non-blocking ``fd`` is full."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            await anyio.wait_writable(fd)
            continue
        view = view[written:]
