"""The service's figures in the Prometheus text format (``GET /metrics``, operator only).

Nothing here is per target: requests by decision, the queue's length, the sizes of the
batches committed together and how long their commits took, failed commits and HTTP
answers by status code.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str) -> list[str]:
        out, running = [], 0
        for bound, n in zip(self.buckets, self.counts, strict=False):
            running += n
            out.append(f'{name}_bucket{{le="{bound:g}"}} {running}')
        out.append(f'{name}_bucket{{le="+Inf"}} {self.count}')
        out.append(f"{name}_sum {self.sum:.6f}")
        out.append(f"{name}_count {self.count}")
        return out


class Metrics:
    """Counters and histograms kept by the service (updated from its threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batch_size = Histogram(BATCH_BUCKETS)
        self.commit_seconds = Histogram(COMMIT_BUCKETS)
        self.commit_failures = 0
        self.responses: Counter[int] = Counter()

    def batch(self, size: int, seconds: float) -> None:
        with self.lock:
            self.batch_size.observe(size)
            self.commit_seconds.observe(seconds)

    def failure(self) -> None:
        with self.lock:
            self.commit_failures += 1

    def response(self, status: int) -> None:
        self.responses[status] += 1  # from the event loop's thread only

    def text(
        self,
        decisions: dict[str, int],
        queued: int,
        ready: bool,
        blocked: dict[str, int] | None = None,
    ) -> str:
        """The exposition text, with the state's totals by decision and queue length, and
        with several views the requests each view blocked first (``blocked``)."""
        lines = [
            "# HELP distgate_requests_total Requests decided in this state, by decision.",
            "# TYPE distgate_requests_total counter",
        ]
        lines += [f'distgate_requests_total{{decision="{d}"}} {n}' for d, n in decisions.items()]
        if blocked:
            lines += [
                "# HELP distgate_view_blocked_total Requests each view was the first to block.",
                "# TYPE distgate_view_blocked_total counter",
            ]
            lines += [
                f'distgate_view_blocked_total{{view="{_label(view)}"}} {n}'
                for view, n in blocked.items()
            ]
        lines += [
            "# HELP distgate_queue_length Records waiting in the gate's queue.",
            "# TYPE distgate_queue_length gauge",
            f"distgate_queue_length {queued}",
            "# HELP distgate_ready Whether the service decides requests (1) or not (0).",
            "# TYPE distgate_ready gauge",
            f"distgate_ready {int(ready)}",
        ]
        with self.lock:
            lines += [
                "# HELP distgate_batch_size Requests committed together in one transaction.",
                "# TYPE distgate_batch_size histogram",
                *self.batch_size.lines("distgate_batch_size"),
                "# HELP distgate_commit_seconds Time to commit one batch to the state file.",
                "# TYPE distgate_commit_seconds histogram",
                *self.commit_seconds.lines("distgate_commit_seconds"),
                "# HELP distgate_commit_failures_total Batches the state file refused.",
                "# TYPE distgate_commit_failures_total counter",
                f"distgate_commit_failures_total {self.commit_failures}",
            ]
        lines += [
            "# HELP distgate_http_responses_total HTTP answers by status code.",
            "# TYPE distgate_http_responses_total counter",
        ]
        lines += [
            f'distgate_http_responses_total{{code="{code}"}} {n}'
            for code, n in sorted(self.responses.items())
        ]
        return "\n".join(lines) + "\n"


def _label(text: str) -> str:
    """A label value as the exposition format writes it (backslash, quote, newline escaped)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
