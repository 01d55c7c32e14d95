"""uvicorn's HTTP protocol on httptools, answering what its parser refuses as the service
answers everything else.

A request that is not well-formed HTTP/1.1 (its request line, a header, a missing,
negative or repeated Content-Length, one beside Transfer-Encoding, a chunk size) never
reaches the application: uvicorn's parser (httptools) refuses it. uvicorn then answers a
plain-text 400 and closes the connection at once. Here:

- the answer is the service's JSON error, counted for ``/metrics``: 400, or 501 when the
  request named a transfer coding the service does not read
  (:func:`distgate.serve.head.transfer_problem`);
- it never overtakes an answer owed on the connection. Bytes the parser refuses after a
  request that arrived whole (a stray byte after a body of the right Content-Length: the
  start of a next request that is not HTTP) are not that request's fault: it is decided,
  committed and answered, and the refusal follows its answer (and those of the requests
  pipelined before the bytes), then the connection is closed. Closing at once lost the
  answer of a request already committed;
- a request whose own body the parser refuses (a bad chunk size) is never decided: its
  body did not arrive whole, and its handler is told that the client went away.
"""

from __future__ import annotations

from distgate.serve.head import transfer_problem
from distgate.serve.metrics import Metrics
from distgate.serve.problem import Problem

MALFORMED = (
    "The request is not well-formed HTTP/1.1 (its request line, a header, its "
    "Content-Length or its chunked body)."
)
_REASONS = {400: b"Bad Request", 501: b"Not Implemented"}


def _refusal(headers: list[tuple[bytes, bytes]] | None) -> Problem:
    """The answer to a request the parser refused, from the header fields it had read."""
    codings = [value for name, value in headers or () if name == b"transfer-encoding"]
    problem = transfer_problem(codings) if codings else None
    if problem is not None and problem.status == 501:
        return problem
    return Problem(400, MALFORMED)


def http_protocol(metrics: Metrics) -> type:
    """uvicorn's HTTP protocol on httptools, with the refusals of the module docstring."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class JSONErrors(HttpToolsProtocol):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.running = None  # the request-response cycle handled last
            self.refusal: tuple[int, bytes] | None = None  # (status, bytes) once refused

        def _start_asgi_task(self, cycle, app) -> None:
            self.running = cycle
            super()._start_asgi_task(cycle, app)

        def data_received(self, data: bytes) -> None:
            if self.refusal is None:  # after a refusal nothing more is read
                super().data_received(data)

        def send_400_response(self, msg: str) -> None:
            """Called by uvicorn when the parser refuses the bytes received."""
            cycle = self.cycle
            if cycle is not None and cycle.scope is self.scope and cycle.more_body:
                # the refused bytes are in the body of the request last begun: it is not
                # handled (queued, it is dropped; running, it reads that the client left)
                if self.pipeline and self.pipeline[0][0] is cycle:
                    self.pipeline.popleft()
                if not cycle.response_started:
                    cycle.disconnected = True
                    cycle.message_event.set()
            problem = _refusal(self.headers)
            body = problem.body()
            head = [b"HTTP/1.1 %d %s\r\n" % (problem.status, _REASONS[problem.status])]
            head += [n + b": " + v + b"\r\n" for n, v in self.server_state.default_headers]
            head.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % len(body))
            self.refusal = problem.status, b"".join([*head, b"connection: close\r\n\r\n", body])
            if self._owed():
                self.flow.pause_reading()
            else:
                self._refuse()

        def on_response_complete(self) -> None:
            super().on_response_complete()  # (starts the next pipelined request, if any)
            if self.refusal is not None and not self._owed():
                self._unset_keepalive_if_required()
                self._refuse()

        def _owed(self) -> bool:
            """Whether a request received whole still waits for its answer."""
            running = self.running
            return bool(self.pipeline) or (
                running is not None and not running.response_complete and not running.disconnected
            )

        def _refuse(self) -> None:
            if self.transport.is_closing():
                return
            status, data = self.refusal
            metrics.response(status)
            self.transport.write(data)
            self.transport.close()

    return JSONErrors
