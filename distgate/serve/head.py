"""The head of a request (its header fields and query string): what the service refuses
before it reads a body or routes the request.

uvicorn's parser (httptools) refuses what cannot be framed (:mod:`distgate.serve.protocol`)
but passes on fields that HTTP allows once, or not at all, as many times as they come.
Read here, once per request, each is answered with a JSON error instead of the first or
the last of them being taken:

- a transfer coding other than ``chunked`` (``Transfer-Encoding: gzip, chunked``): 501,
  and the connection is closed (the body's framing is the client's and not the service's);
  ``chunked`` twice: 400;
- no ``Host`` field in an HTTP/1.1 request, or two in any: 400 (RFC 9112, section 3.2);
- two ``Authorization`` fields: 400 (which one names the client is not for the service to
  guess);
- a content coding other than ``identity`` (``Content-Encoding: gzip``): 415, with
  ``Accept-Encoding: identity``; the service does not decompress bodies;
- a query parameter given twice (``?after=1&after=2``): 400.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from distgate.serve.problem import Problem

CLOSE = {"Connection": "close"}


def transfer_problem(codings: list[bytes]) -> Problem | None:
    """The answer to a request whose ``Transfer-Encoding`` fields hold ``codings`` (their
    values, as sent), None when they are the one coding the service reads, ``chunked``."""
    names = [c.strip().lower() for value in codings for c in value.split(b",")]
    unknown = [n for n in names if n != b"chunked"]
    if unknown:
        shown = unknown[0].decode("latin-1")
        return Problem(
            501,
            f"The transfer coding '{shown}' is not supported: send the body with "
            "Content-Length or Transfer-Encoding: chunked alone.",
            CLOSE,
        )
    if len(names) > 1:
        return Problem(400, "The body is chunked twice (Transfer-Encoding).", CLOSE)
    return None


def read_head(scope: dict) -> tuple[str | None, str | None]:
    """The ``Authorization`` and ``Content-Length`` of an ASGI request (None when absent),
    once the head is one the service answers (:class:`Problem` otherwise; see the module
    docstring)."""
    authorization = length = None
    hosts = authorizations = 0
    codings: list[bytes] | None = None
    content_coding: bytes | None = None
    for name, value in scope["headers"]:
        if name == b"host":
            hosts += 1
        elif name == b"authorization":
            authorizations += 1
            authorization = value.decode("latin-1")
        elif name == b"content-length":
            length = value.decode("latin-1")
        elif name == b"transfer-encoding":
            codings = [*(codings or []), value]
        elif name == b"content-encoding":
            content_coding = value if content_coding is None else content_coding + b"," + value
    if codings is not None:
        problem = transfer_problem(codings)
        if problem is not None:
            raise problem
    if hosts > 1:
        raise Problem(400, f"The request has {hosts} Host fields; send one.")
    if hosts == 0 and scope["http_version"] == "1.1":
        raise Problem(400, "The request has no Host field, which HTTP/1.1 requires.")
    if authorizations > 1:
        raise Problem(400, f"The request has {authorizations} Authorization fields; send one.")
    if content_coding is not None:
        _identity(content_coding)
    if scope["query_string"]:
        _once(scope["query_string"])
    return authorization, length


def _identity(codings: bytes) -> None:
    """415 for a body in a content coding other than identity."""
    for coding in codings.split(b","):
        name = coding.strip().lower()
        if name and name != b"identity":
            raise Problem(
                415,
                f"The content coding '{name.decode('latin-1')}' is not supported: send the "
                "body uncompressed (Content-Encoding: identity, or none).",
                {"Accept-Encoding": "identity"},
            )


def _once(query: bytes) -> None:
    """400 for a query parameter given twice (read as Starlette reads the query string)."""
    names = [name for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)]
    if len(names) != len(set(names)):
        repeated = next(name for i, name in enumerate(names) if name in names[:i])
        raise Problem(400, f"The query parameter '{repeated}' is given more than once.")
