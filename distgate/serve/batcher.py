"""Group commit: the requests that arrive while a batch is being decided and committed are
decided together next, as one batch in one transaction.

Handlers hand their keys to :meth:`Batcher.decide` and wait; one task takes every waiting
group (up to ``max_keys`` keys), has the session decide and commit them in a thread of
its own (the compiled gate and SQLite's flush to the disk release the interpreter, so the
event loop goes on reading requests), and wakes each handler with its decisions. An
answer therefore never leaves before its decision is durable, and a flush to the disk
serves every request that arrived during the previous one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from distgate.gate.session import Decided, GateSession, StateUnwritable
from distgate.serve.metrics import Metrics

MAX_KEYS = 20_000  # keys decided in one batch at most


class Batcher:
    def __init__(self, session: GateSession, metrics: Metrics, max_keys: int = MAX_KEYS) -> None:
        self.session, self.metrics, self.max_keys = session, metrics, max_keys
        self.waiting: list[tuple[Sequence[str], str | None, asyncio.Future]] = []
        self.wake = asyncio.Event()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distgate-decide")
        self.stopping = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def decide(self, keys: Sequence[str], requester: str | None) -> Decided:
        """The decisions of ``keys``, once committed (StateUnwritable if they cannot be)."""
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((keys, requester, future))
        self.wake.set()
        # a handler cancelled while it waits cancels only its future: its keys stay in the
        # batch (decided and committed; the answer goes nowhere)
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.wake.wait()
            # one turn of the loop first: requests already read from the sockets join
            await asyncio.sleep(0)
            self.wake.clear()
            while self.waiting:
                taken, size = 0, 0
                while taken < len(self.waiting) and (
                    taken == 0 or size + len(self.waiting[taken][0]) <= self.max_keys
                ):
                    size += len(self.waiting[taken][0])
                    taken += 1
                groups, self.waiting = self.waiting[:taken], self.waiting[taken:]
                try:
                    decided = await loop.run_in_executor(
                        self.pool,
                        self.session.decide_groups,
                        [(keys, who) for keys, who, _ in groups],
                    )
                except StateUnwritable as exc:
                    self.metrics.failure()
                    for _, _, future in groups:
                        if not future.done():
                            future.set_exception(StateUnwritable(exc.reason))
                    continue
                except BaseException as exc:  # handed to the waiting handlers
                    for _, _, future in groups:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                self.metrics.batch(size, self.session.commit_seconds)
                for (_, _, future), answer in zip(groups, decided, strict=True):
                    if not future.done():
                        future.set_result(answer)
            if self.stopping:
                return

    async def stop(self) -> None:
        """Decide what is waiting, then stop (the server has stopped taking requests)."""
        self.stopping = True
        self.wake.set()
        await self.task
        self.pool.shutdown(wait=True)
