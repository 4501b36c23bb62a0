"""stdin's lines for the MCP SDK's stdio transport, each checked against a size limit before it is parsed.

The SDK reads a whole line, however long, then parses it. Here a line is kept only while it fits
`limit`; past it, the rest is skipped as it arrives (never stored) and the client gets an error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import contextmanager
from typing import BinaryIO

import anyio.to_thread

from ._http_guards import LOGGER

CHUNK_BYTES = 64 * 1024
"""How much of stdin is read at a time: a line is held to its limit plus at most this much."""


class BoundedLines:
    """stdin's lines (as text), never holding one over `limit` bytes: `refuse(size)` is awaited in its place."""

    def __init__(self, source: BinaryIO, limit: int) -> None:
        self._source = source
        self.limit = limit
        self.refuse: Callable[[int], Awaitable[None]] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        read = getattr(self._source, 'read1', self._source.read)
        pending = bytearray()
        skipped = 0  # bytes of the current line over the limit, thrown away as they come
        while chunk := await anyio.to_thread.run_sync(read, CHUNK_BYTES):
            start = 0
            while True:
                newline = chunk.find(b'\n', start)
                piece = chunk[start : len(chunk) if newline < 0 else newline]
                if skipped:
                    skipped += len(piece)
                elif len(pending) + len(piece) > self.limit:
                    skipped = len(pending) + len(piece)
                    pending.clear()
                else:
                    pending += piece
                if newline < 0:
                    break
                if skipped:
                    await self._refused(skipped)
                    skipped = 0
                elif pending.strip():
                    yield pending.decode('utf-8', 'replace')
                pending.clear()
                start = newline + 1
        if skipped:  # the last line, with no newline
            await self._refused(skipped)
        elif pending.strip():
            yield pending.decode('utf-8', 'replace')

    async def _refused(self, size: int) -> None:
        LOGGER.warning('agentool mcp: refused a stdin line of %d bytes, over the limit of %d', size, self.limit)
        if self.refuse is not None:
            await self.refuse(size)


@contextmanager
def claimed_stdin() -> Generator[BinaryIO | None]:
    """The protocol's stdin, read from a private duplicate while fd 0 reads the null device (restored on exit).

    A tool reading stdin gets EOF instead of the client's messages. `None` when stdin has no file
    descriptor (a test's stand-in).
    """
    private: int | None = None
    try:
        fd = sys.stdin.fileno()
        private = os.dup(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        if private is not None:
            os.close(private)
        yield None
        return
    reader = os.fdopen(private, 'rb')
    try:
        yield reader
    finally:
        os.dup2(private, fd)
        reader.close()
