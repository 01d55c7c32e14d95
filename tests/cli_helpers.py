"""Running the command line in tests as its console script runs it: ``sys.argv`` is
``distgate`` and the words given (so usage errors name ``distgate``, as the script's do),
and :func:`distgate.cli.run` picks the app of the one
command named and gives usage errors distgate's one style. It runs in this process;
Typer's runner only stands in for the standard streams (not terminals: the report is
plain text) and the environment. What the console script adds, leaving with the exit code
through ``os._exit``, is tested on the script itself (tests/test_command_line.py)."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from unittest import mock

from typer.testing import CliRunner

from distgate.cli import run as run_command_line


@dataclass
class Ran:
    """What a command line did: its exit code and what it wrote (``output``: both streams,
    in the order written)."""

    exit_code: int
    stdout: str
    stderr: str
    output: str


def invoke(
    args: Iterable[object],
    input: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Ran:
    """Run ``distgate ARGS`` (each word made a string) with ``input`` on standard input and
    ``env`` set in the environment (None: unset)."""
    words = ["distgate", *map(str, args)]
    previous = signal.getsignal(signal.SIGTERM)  # (run() sets its own handler)
    try:
        with (
            CliRunner().isolation(input=input, env=env) as (stdout, stderr, output),
            mock.patch.object(sys, "argv", words),
            # the script is no package's __main__ (python -m): click names it by argv[0]
            mock.patch.object(sys.modules["__main__"], "__package__", None),
        ):
            code = run_command_line()
            sys.stdout.flush()
            sys.stderr.flush()
            return Ran(code, *(s.getvalue().decode() for s in (stdout, stderr, output)))
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(*args: object, input: str | bytes | None = None) -> Ran:
    return invoke(args, input=input)


def run_json(*args: object):
    result = run(*args, "--json")
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


def assert_bad_input(result: Ran, *words: str) -> None:
    """Exit 2 with one sentence on stderr that names what is wrong, and no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    message = result.stderr.strip()
    assert message.startswith("distgate: "), message
    assert len(message.splitlines()) == 1, message
    assert "Traceback" not in result.output
    for word in words:
        assert word in message, (word, message)
