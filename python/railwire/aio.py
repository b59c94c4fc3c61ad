# SPDX-License-Identifier: MIT
"""railwire.aio: railwire transfers awaited on asyncio's own event loop.

    import railwire.aio

    async with await railwire.aio.connect("10.0.0.7", 7000, rails=2, dialect="rw") as ars:
        mr = ars.register(pages)
        await ars.read(mr, 0, 65536, remote_offset, timeout=0.2)

The event loop watches the railset's fd (Railset.fileno(), level-triggered)
with add_reader; when it fires, one callback polls the railset and
resolves the awaiting futures.  No thread per call, no polling timer: a
transfer costs one submit and a share of one poll.  Per-transfer deadlines
(timeout=, seconds) are the C railset's own (railwire_op.timeout_ms): a
transfer not finished in time is cancelled and its await raises
railwire.Timeout.  Cancelling the awaiting task cancels the transfer
(Railset.cancel) before CancelledError propagates; its buffer may still be
written until the railset returns its completion, which the callback then
drops (see railwire_cancel in railset.h for the bound and what a cancelled
WRITE may have changed remotely).

An AsyncRailset owns its Railset's completions: do not call poll() or
wait() on that Railset elsewhere (its synchronous read()/write() still work:
their transfers are reserved for them).  One event loop per AsyncRailset:
the first await binds it.
"""
import asyncio
import functools

import railwire
from .errors import Closed, InvalidArgument, InvalidState

__all__ = ["connect", "AsyncRailset"]

_POLL_MAX = 256


class _One:
    """The future of one transfer."""
    __slots__ = ("fut",)

    def __init__(self, fut):
        self.fut = fut

    def complete(self, c):
        if not self.fut.done():
            self.fut.set_result(c)


class _Batch:
    """One future for a whole batch: set when every transfer finished, with
    the first failed transfer's error (or None)."""
    __slots__ = ("fut", "left", "error")

    def __init__(self, fut, n):
        self.fut = fut
        self.left = n
        self.error = None

    def complete(self, c):
        self.left -= 1
        if c.status and self.error is None:
            self.error = c.error
        if self.left == 0 and not self.fut.done():
            self.fut.set_result(self.error)


class AsyncRailset:
    """Wraps a connected railwire.Railset for asyncio.  An async context
    manager: ``async with ars:`` closes the railset at the end."""

    def __init__(self, rs):
        if not isinstance(rs, railwire.Railset):
            raise InvalidArgument("AsyncRailset wraps a railwire.Railset (got %r)" % (rs,))
        self._rs = rs
        self._loop = None
        self._fd = -1
        self._waiting = {}      # handle -> _One or _Batch

    @property
    def railset(self):
        """The wrapped Railset."""
        return self._rs

    @property
    def pending(self):
        """Transfers whose completion the railset has not returned yet."""
        return self._rs.pending

    def _bind(self):
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return loop
        if self._loop is not None:
            raise InvalidArgument("an AsyncRailset serves one event loop (it is bound to "
                                  "another one)")
        if self._rs.closed:
            raise Closed("the railset is closed")
        self._fd = self._rs.fileno()
        loop.add_reader(self._fd, self._on_ready)
        self._loop = loop
        return loop

    def _on_ready(self):
        rs, waiting = self._rs, self._waiting
        try:
            while True:
                got = rs.poll(max=_POLL_MAX)
                for c in got:
                    w = waiting.pop(c.handle, None)
                    if w is not None:      # None: a cancelled task's transfer
                        w.complete(c)
                if len(got) < _POLL_MAX:
                    return
        except Closed:
            self._unbind()

    def _unbind(self):
        if self._loop is not None and self._fd >= 0:
            try:
                self._loop.remove_reader(self._fd)
            except (ValueError, RuntimeError):  # the loop is already closed
                pass
        self._fd = -1

    def _cancel(self, handles):
        """The awaiting task was cancelled: cancel what is unfinished."""
        for h in handles:
            if self._waiting.pop(h, None) is None:
                continue
            try:
                self._rs.cancel(h)
            except (InvalidArgument, InvalidState, Closed):
                pass  # finished meanwhile, or the railset closed

    async def _await(self, handles, waiter):
        try:
            return await waiter.fut
        except asyncio.CancelledError:
            self._cancel(handles)
            raise

    def register(self, buf):
        """Registers a buffer (Railset.register); returns its MemoryRegion."""
        return self._rs.register(buf)

    async def _one(self, submit, mr, local_offset, length, remote_offset, layer, timeout):
        loop = self._bind()
        h = submit(mr, local_offset, length, remote_offset, layer=layer, timeout=timeout)
        w = _One(loop.create_future())
        self._waiting[h] = w
        c = await self._await((h,), w)
        if c.status:
            raise c.error

    async def read(self, mr, local_offset, length, remote_offset, *, layer=0, timeout=None):
        """Reads length bytes at remote_offset (of `layer`, RO) into mr at
        local_offset; returns when they are there, or raises the transfer's
        railwire.Error (Timeout when `timeout` seconds passed first)."""
        await self._one(self._rs.submit_read, mr, local_offset, length, remote_offset, layer,
                        timeout)

    async def write(self, mr, local_offset, length, remote_offset, *, layer=0, timeout=None):
        """Writes length bytes of mr at local_offset to remote_offset; like read()."""
        await self._one(self._rs.submit_write, mr, local_offset, length, remote_offset, layer,
                        timeout)

    async def _batch(self, opcode, mr, local_offsets, remote_offsets, lengths, layers, timeout):
        loop = self._bind()
        handles = self._rs.submit_batch(opcode, mr, local_offsets, remote_offsets, lengths,
                                        layers=layers, timeout=timeout)
        if not handles:
            return
        w = _Batch(loop.create_future(), len(handles))
        for h in handles:
            self._waiting[h] = w
        err = await self._await(handles, w)
        if err is not None:
            raise err

    async def read_batch(self, mr, local_offsets, remote_offsets, lengths, *, layers=None,
                         timeout=None):
        """Reads a batch (Railset.submit_batch's arguments); returns when all
        of it has arrived, or raises the first failed transfer's error once
        every transfer of the batch has finished.  timeout: per transfer."""
        await self._batch(railwire.READ, mr, local_offsets, remote_offsets, lengths, layers,
                          timeout)

    async def write_batch(self, mr, local_offsets, remote_offsets, lengths, *, layers=None,
                          timeout=None):
        """Writes a batch; like read_batch()."""
        await self._batch(railwire.WRITE, mr, local_offsets, remote_offsets, lengths, layers,
                          timeout)

    def stats(self):
        """Per-rail counters (Railset.stats)."""
        return self._rs.stats()

    def close(self):
        """Closes the railset; awaits still running raise railwire.Closed."""
        self._unbind()
        self._rs.close()
        waiting, self._waiting = self._waiting, {}
        for w in set(waiting.values()):
            if not w.fut.done():
                w.fut.set_exception(Closed("the railset was closed while the transfer was pending"))

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<railwire.aio.AsyncRailset %r>" % (self._rs,)


async def connect(host, port, **kwargs):
    """Connects like railwire.connect (same keywords) without blocking the
    event loop (the handshake runs in the loop's default executor, once) and
    returns an AsyncRailset."""
    loop = asyncio.get_running_loop()
    rs = await loop.run_in_executor(None, functools.partial(railwire.connect, host, port, **kwargs))
    return AsyncRailset(rs)
