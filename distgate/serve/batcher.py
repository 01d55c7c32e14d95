"""Group commit: the requests that arrive while a batch is being decided and committed are
decided together next, as one batch in one transaction.

Handlers hand their keys to :meth:`Batcher.decide` and wait; one task takes every waiting
group (up to ``max_keys`` keys), has the session decide and commit them in a thread of
its own (the compiled gate and SQLite's flush to the disk release the interpreter, so the
event loop goes on reading requests), the answers' JSON made there too (for a large batch
while its commit is flushed: :meth:`DurableSession.decide_prepared`), and wakes each handler
with its decisions and answer. An answer therefore never leaves before its decision is
durable, and a flush to the disk serves every request that arrived during the previous
one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from distgate.gate.decisions import Decided
from distgate.serve.metrics import Metrics
from distgate.serve.render import BatchRenderer
from distgate.workflows.durable_session import DurableSession, StateUnwritable

MAX_KEYS = 20_000  # keys decided in one batch at most


class Batcher:
    def __init__(
        self,
        session: DurableSession,
        metrics: Metrics,
        renderer: BatchRenderer,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.session, self.metrics, self.max_keys = session, metrics, max_keys
        self.renderer = renderer
        # (keys, requester, whether they came as a batch, the handler's future)
        self.waiting: list[tuple[Sequence[str], str | None, bool, asyncio.Future]] = []
        self.wake = asyncio.Event()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distgate-decide")
        self.stopping = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def decide(
        self, keys: Sequence[str], requester: str | None, batch: bool
    ) -> tuple[Decided, bytes]:
        """The decisions of ``keys`` and the JSON answer of them (a batch's, or a single
        key's), once committed (StateUnwritable if they cannot be)."""
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((keys, requester, batch, future))
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
                batches = [batch for _, _, batch, _ in groups]
                try:
                    decided, answers = await loop.run_in_executor(
                        self.pool,
                        self.session.decide_prepared,
                        [(keys, who) for keys, who, _, _ in groups],
                        partial(self._answers, batches),
                    )
                except StateUnwritable as exc:
                    self.metrics.failure()
                    for *_, future in groups:
                        if not future.done():
                            future.set_exception(StateUnwritable(exc.reason))
                    continue
                except BaseException as exc:  # handed to the waiting handlers
                    for *_, future in groups:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                self.metrics.batch(size, self.session.commit_seconds)
                for (*_, future), part, answer in zip(groups, decided, answers, strict=True):
                    if future.done():
                        continue
                    if isinstance(answer, Exception):
                        future.set_exception(answer)
                    else:
                        future.set_result((part, answer))
            if self.stopping:
                return

    def _answers(self, batches: list[bool], parts: list[Decided]) -> list[bytes | Exception]:
        """Each group's answer (an answer that could not be made fails its group only)."""
        render, out = self.renderer, []
        for part, batch in zip(parts, batches, strict=True):
            try:
                out.append(render.decisions(part) if batch else render.one(part))
            except Exception as exc:  # handed to the group's handler
                out.append(exc)
        return out

    async def stop(self) -> None:
        """Decide what is waiting, then stop (the server has stopped taking requests)."""
        self.stopping = True
        self.wake.set()
        await self.task
        self.pool.shutdown(wait=True)
