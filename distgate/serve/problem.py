"""An answer with an error: what every check of the service raises, and its JSON body."""

from __future__ import annotations

from distgate.serve.render import dumps


class Problem(Exception):
    """An answer with an error: its status and the sentence of its JSON body."""

    def __init__(self, status: int, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers

    def body(self) -> bytes:
        """The answer's JSON body: ``{"error": "one sentence"}``."""
        return dumps({"error": self.message})
