"""Who is asking: bearer tokens for the operator and for each requester.

A token is compared by its SHA-256 digest: the presented token is hashed and looked up
among the digests of the configured tokens, and the match is confirmed with
:func:`hmac.compare_digest`. The time an answer takes therefore depends on the digest of
what was presented, never on how many leading characters of a real token it shares.

Tokens come from files (``--operator-token-file``: one token; ``--requester-tokens``:
one ``NAME TOKEN`` pair a line, ``#`` comments) or from the environment
(``DISTGATE_OPERATOR_TOKEN``; ``DISTGATE_REQUESTER_TOKENS``: ``NAME=TOKEN`` pairs
separated by commas). With none configured, every client is the operator: allowed only
on a loopback address.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
from dataclasses import dataclass, field

from distgate.errors import InputError

OPERATOR_ENV = "DISTGATE_OPERATOR_TOKEN"
REQUESTERS_ENV = "DISTGATE_REQUESTER_TOKENS"
MIN_TOKEN = 16  # characters
NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True)
class Client:
    """An authenticated client: the operator, or a requester with its name."""

    operator: bool
    name: str | None  # the requester's name (None for the operator)


OPERATOR = Client(True, None)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass
class Tokens:
    """The configured tokens (see the module docstring)."""

    operator: bytes | None = None  # digest of the operator's token
    requesters: dict[bytes, str] = field(default_factory=dict)  # digest -> name

    @property
    def open(self) -> bool:
        """No token configured: every client is the operator."""
        return self.operator is None and not self.requesters

    def client(self, authorization: str | None) -> Client | None:
        """The client an ``Authorization`` header names, None when it names nobody."""
        if self.open:
            return OPERATOR
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = _digest(token.strip())
        if self.operator is not None and hmac.compare_digest(digest, self.operator):
            return OPERATOR
        name = self.requesters.get(digest)
        if name is not None:
            return Client(False, name)
        return None


def _check_token(token: str, where: str) -> str:
    token = token.strip()
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token):
        raise InputError(
            f"The token in {where} is too short or holds a space: use at least "
            f"{MIN_TOKEN} characters without spaces (e.g. from 'openssl rand -hex 32')."
        )
    return token


def _read(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise InputError(f"The {what} file '{path}' does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"The {what} file '{path}' cannot be read ({exc}).") from None


def _add_requester(tokens: Tokens, name: str, token: str, where: str) -> None:
    if not NAME.match(name):
        raise InputError(
            f"The requester name '{name}' in {where} is not a name: use letters, digits and "
            "_ . @ - (up to 64)."
        )
    digest = _digest(_check_token(token, where))
    if digest in tokens.requesters or digest == tokens.operator:
        raise InputError(f"A token in {where} is given twice: each client needs its own.")
    if name in tokens.requesters.values():
        raise InputError(f"The requester '{name}' in {where} has two tokens.")
    tokens.requesters[digest] = name


def load_tokens(
    operator_file: str | None = None,
    requesters_file: str | None = None,
    environ: dict[str, str] | None = None,
) -> Tokens:
    """The tokens of the files given, else of the environment (InputError naming a bad
    line)."""
    environ = os.environ if environ is None else environ
    tokens = Tokens()
    if operator_file:
        tokens.operator = _digest(
            _check_token(_read(operator_file, "operator token"), f"'{operator_file}'")
        )
    elif environ.get(OPERATOR_ENV):
        tokens.operator = _digest(_check_token(environ[OPERATOR_ENV], OPERATOR_ENV))
    if requesters_file:
        text = _read(requesters_file, "requester tokens")
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            where = f"'{requesters_file}', line {number}"
            if len(parts) != 2:
                raise InputError(f"The line {number} of '{requesters_file}' is not 'NAME TOKEN'.")
            _add_requester(tokens, parts[0], parts[1], where)
    elif environ.get(REQUESTERS_ENV):
        for number, pair in enumerate(environ[REQUESTERS_ENV].split(","), start=1):
            if not pair.strip():
                continue
            name, sep, token = pair.strip().partition("=")
            if not sep:
                raise InputError(f"The entry {number} of {REQUESTERS_ENV} is not NAME=TOKEN.")
            _add_requester(tokens, name.strip(), token, f"{REQUESTERS_ENV}, entry {number}")
    return tokens


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback address (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
