"""One queue in front of the verifier: items of concurrent requests judged together, in bounded batches.

    batcher = Batcher(verifier, config.serve, instruments)          # anything with verify_many (verify_iter: better)
    task = asyncio.create_task(batcher.run())        # on the service's event loop
    ticket = batcher.submit(items)                   # QueueFull (429) / Draining (503) when it cannot take them
    results = await ticket.answer()                  # in the order of items
    batcher.cancel(ticket)                           # a client gone or past its deadline: its queued items go

Every queued item of every request waits in one FIFO queue of at most ``serve.max_queue_items``. The dispatcher
takes up to ``serve.max_batch_items`` of them (of any requests; after ``serve.batch_wait_ms`` for more to come,
when fewer are waiting) and hands them to the verifier in a worker thread, up to ``serve.batches_in_flight``
batches at once, so the verifier's places stay full while a batch's last items finish. Each verdict reaches its
request as soon as it is given (``verify_iter``; a verifier without it, such as the Ray backend, answers a batch
whole). Items already handed over run to their verdict even if their request is cancelled (the verifier has no
way to stop one item of a batch); their verdicts are dropped.

A judge that dies mid-batch is the verifier's to handle (``Verifier._judged``: its items are judged once more on a
fresh judge, then get a ``verifier_error`` verdict; the Ray backend retries on another actor), so no item is
lost and none retried here. If the verifier itself raises, each item of the batch still without a verdict gets a
``verifier_error`` verdict saying so: an infrastructure failure, flagged, never a silent zero.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tritonrl.config import ServeConfig
from tritonrl.serve.instruments import Instruments
from tritonrl.verify import Flag, Stage, VerifyItem, VerifyResult

log = logging.getLogger(__name__)

RATE_WEIGHT = 0.3  # of the newest batch in the items-per-second estimate behind Retry-After


class QueueFull(Exception):
    """The queue cannot take a request's items now; come back in ``retry_after_s``."""

    def __init__(self, retry_after_s: int, waiting: int):
        super().__init__(f"the queue is full ({waiting} items waiting); retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class Draining(Exception):
    """The service is stopping (SIGTERM): it finishes what it accepted and takes nothing new."""


@dataclass(eq=False)
class Ticket:
    """One request's items and their verdicts to come."""

    items: list[VerifyItem]
    futures: list[asyncio.Future] = field(default_factory=list)

    async def answer(self) -> list[VerifyResult]:
        return list(await asyncio.gather(*self.futures))


def infrastructure_failure(message: str) -> VerifyResult:
    """The verdict of an item the verifier could not judge: flagged ``verifier_error``, no reward claimed."""
    return VerifyResult(Stage.COMPILE, flags=[Flag.VERIFIER_ERROR.value], error=message)


class Batcher:
    def __init__(self, verifier: Any, limits: ServeConfig, instruments: Instruments):
        self._verifier = verifier
        self.limits = limits
        self.instruments = instruments
        self.draining = False
        self._queue: deque[tuple[Ticket, int]] = deque()
        self._in_flight = 0
        self._batches: set[asyncio.Task] = set()
        self._pool = ThreadPoolExecutor(max_workers=limits.batches_in_flight, thread_name_prefix="tritonrl-serve")
        self._items_per_s: float | None = None
        self._wake: asyncio.Event | None = None
        self._slots: asyncio.Semaphore | None = None

    # ------------------------------------------------------------ requests' side
    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def submit(self, items: list[VerifyItem]) -> Ticket:
        """Queue ``items`` (all or none) and return their ticket."""
        if self.draining:
            raise Draining("the service is stopping: it takes no new requests")
        if self.queued + len(items) > self.limits.max_queue_items:
            raise QueueFull(self.retry_after_s(), self.queued)
        loop = asyncio.get_running_loop()
        ticket = Ticket(items, [loop.create_future() for _ in items])
        self._queue.extend((ticket, i) for i in range(len(items)))
        self._changed()
        assert self._wake is not None, "Batcher.run is not running"
        self._wake.set()
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Drop ``ticket``'s items still queued; those being judged finish, unseen."""
        if any(t is ticket for t, _ in self._queue):
            self._queue = deque(entry for entry in self._queue if entry[0] is not ticket)
            self._changed()
        for future in ticket.futures:
            future.cancel()

    def retry_after_s(self) -> int:
        """Seconds until the queue likely has room: what is waiting over the recent rate (1 to 300)."""
        rate = self._items_per_s
        if not rate:
            return 2  # nothing judged yet to estimate from
        return int(min(300, max(1, math.ceil((self.queued + self._in_flight) / rate))))

    async def idle(self) -> None:
        """Return once nothing is queued or being judged (the drain's end)."""
        while self._queue or self._batches:
            await asyncio.sleep(0.05)

    # ------------------------------------------------------------ the dispatcher
    async def run(self) -> None:
        """Hand batches to the verifier until cancelled."""
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(self.limits.batches_in_flight)
        try:
            while True:
                await self._wake.wait()
                await self._slots.acquire()
                if self.limits.batch_wait_ms and len(self._queue) < self.limits.max_batch_items:
                    await asyncio.sleep(self.limits.batch_wait_ms / 1000)  # other requests' items join
                batch = self._take()
                if not batch:
                    self._slots.release()
                    continue
                task = asyncio.create_task(self._judge(batch))
                self._batches.add(task)
                task.add_done_callback(self._batches.discard)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _take(self) -> list[tuple[Ticket, int]]:
        batch = []
        while self._queue and len(batch) < self.limits.max_batch_items:
            batch.append(self._queue.popleft())
        if not self._queue:
            self._wake.clear()
        self._in_flight += len(batch)
        self._changed()
        return batch

    async def _judge(self, batch: list[tuple[Ticket, int]]) -> None:
        """One batch through the verifier in a worker thread; each verdict lands on its request as it comes
        (``verify_iter`` where the verifier has it: a static rejection is not held back by a slow kernel of its
        batch), and an item left without one gets an infrastructure failure's verdict."""
        loop = asyncio.get_running_loop()
        items = [ticket.items[i] for ticket, i in batch]
        landed: set[int] = set()

        def land(k: int, result: VerifyResult) -> None:  # on the event loop
            if k in landed:
                return
            landed.add(k)
            self._in_flight -= 1
            self._changed()
            self.instruments.verdict(result)
            ticket, i = batch[k]
            if not ticket.futures[i].done():
                ticket.futures[i].set_result(result)

        def work() -> None:  # in the worker thread
            for k, result in self._stream(items):
                loop.call_soon_threadsafe(land, k, result)

        self.instruments.batch_started(len(items))
        started = time.monotonic()
        why = "the verifier returned no verdict for it"
        try:
            await loop.run_in_executor(self._pool, work)  # its verdicts' callbacks were queued before its end
        except Exception as exc:  # noqa: BLE001 - every item gets a flagged verdict; the service goes on
            log.exception("the verifier failed on a batch of %d items", len(items))
            why = f"the verifier failed on this batch ({type(exc).__name__}: {exc})"
        finally:
            self.instruments.batch_ended()
            self._slots.release()
        for k in range(len(batch)):
            land(k, infrastructure_failure(f"not judged: {why}"[:500]))
        self._measure(len(items), time.monotonic() - started)

    def _stream(self, items: list[VerifyItem]):
        """``(index, verdict)`` pairs: as each finishes (``verify_iter``), else all at the end (``verify_many``)."""
        iterate = getattr(self._verifier, "verify_iter", None)
        if iterate is not None:
            yield from iterate(items)
            return
        results = self._verifier.verify_many(items)
        if len(results) != len(items):
            raise RuntimeError(f"the verifier returned {len(results)} verdicts for {len(items)} items")
        yield from enumerate(results)

    def _measure(self, items: int, seconds: float) -> None:
        rate = items * self.limits.batches_in_flight / max(seconds, 1e-3)
        old = self._items_per_s
        self._items_per_s = rate if old is None else (1 - RATE_WEIGHT) * old + RATE_WEIGHT * rate

    def _changed(self) -> None:
        self.instruments.queue.set(len(self._queue))
        self.instruments.in_flight.set(self._in_flight)
