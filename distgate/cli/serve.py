"""``distgate serve``: the online gate as an HTTP service over a table and a state file
(:func:`distgate.gate_opener`, the gate :func:`distgate.open_gate` opens, opened while
the service listens)."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import handles_bad_input
from distgate.cli.options import GATE_AS_GIVEN, GateFlags, bundled
from distgate.cli.output import print_notes
from distgate.data.spec import TableSpec
from distgate.defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_KEY_BYTES,
    DEFAULT_PORT,
)
from distgate.errors import InputError


@handles_bad_input
@bundled(hidden=("weight",))
def serve_command(
    table: TableSpec,
    state: Annotated[
        str,
        typer.Option(
            "--state",
            metavar="FILE",
            help="SQLite file of the gate's state (replay's format); created if missing.",
        ),
    ],
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on.")
    ] = DEFAULT_HOST,
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", help="Port to listen on (0: any free one).")
    ] = DEFAULT_PORT,
    columns: Annotated[
        list[str] | None,
        typer.Option(
            "--columns",
            metavar="COLUMN",
            help="Table columns shown with a released record besides its target and "
            "attribute values; repeat or comma-separate.",
        ),
    ] = None,
    operator_token_file: Annotated[
        str | None,
        typer.Option(
            "--operator-token-file",
            metavar="FILE",
            help="File holding the operator's bearer token [env: DISTGATE_OPERATOR_TOKEN].",
        ),
    ] = None,
    requester_tokens: Annotated[
        str | None,
        typer.Option(
            "--requester-tokens",
            metavar="FILE",
            help="File of requesters' tokens, one 'NAME TOKEN' a line "
            "[env: DISTGATE_REQUESTER_TOKENS='NAME=TOKEN,...'].",
        ),
    ] = None,
    max_batch: Annotated[
        int, typer.Option("--max-batch", metavar="N", help="Keys in one POST at most.")
    ] = DEFAULT_MAX_BATCH,
    max_body: Annotated[
        int, typer.Option("--max-body", metavar="BYTES", help="Bytes of one request body.")
    ] = DEFAULT_MAX_BODY,
    body_timeout: Annotated[
        float,
        typer.Option("--body-timeout", metavar="SECONDS", help="Time to receive one body."),
    ] = DEFAULT_BODY_TIMEOUT,
    max_key_bytes: Annotated[
        int,
        typer.Option(
            "--max-key-bytes",
            metavar="BYTES",
            help="Bytes of one key (UTF-8) at most; a longer key is refused, not stored.",
        ),
    ] = DEFAULT_MAX_KEY_BYTES,
    gate: GateFlags = GATE_AS_GIVEN,
) -> None:
    """Serve the release gate over TABLE: requesters POST keys and get each decision once
    it is committed to --state; the operator reads the summary and metrics.

    Example: distgate serve soldiers.csv --state gate.db --port 8000
    """

    try:
        from distgate.serve.app import Limits
        from distgate.serve.auth import is_loopback, load_tokens
        from distgate.serve.server import ServeOptions, run
    except ImportError as exc:
        from distgate.extras import missing

        raise missing("distgate serve", "serve", exc.name or "starlette") from None
    from distgate.api import gate_opener

    opened = gate_opener(table, state, columns=columns, **gate)  # the options checked now
    for name, value, low in (
        ("--max-batch", max_batch, 1),
        ("--max-body", max_body, 64),
        ("--max-key-bytes", max_key_bytes, 1),
    ):
        if value < low:
            raise InputError(f"{name} must be at least {low}.")
    if not 0 < body_timeout <= 3600:
        raise InputError("--body-timeout must be between 0 and 3600 seconds.")
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port} is not a port (0 to 65535).")
    tokens = load_tokens(operator_token_file, requester_tokens)
    if tokens.open and not is_loopback(host):
        raise InputError(
            f"Listening on {host}, which is not a loopback address, needs tokens: give "
            "--operator-token-file and --requester-tokens (or their environment variables)."
        )

    def load():
        session = opened()  # the table read while the service listens
        print_notes(session.reading)
        return session

    limits = Limits(
        max_batch=max_batch,
        max_body=max_body,
        body_timeout=body_timeout,
        max_key_bytes=max_key_bytes,
    )
    code = run(load, tokens, ServeOptions(host=host, port=port, limits=limits))
    if code:
        raise typer.Exit(code)
