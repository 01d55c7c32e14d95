"""``distgate serve``: the online gate as an HTTP service over a table and a state file."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    AlphaOption,
    CriticalOption,
    DrawsOption,
    GraceOption,
    IndistinguishableOption,
    MetricOption,
    NoQueueOption,
    SeedOption,
    ShareOption,
    ThresholdOption,
    handles_bad_input,
)
from distgate.cli.options import bundled
from distgate.cli.output import print_notes
from distgate.data.spec import TableSpec
from distgate.defaults import DEFAULT_DRAWS
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
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", help="Port to listen on (0: any free one).")
    ] = 8000,
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
    ] = 10_000,
    max_body: Annotated[
        int, typer.Option("--max-body", metavar="BYTES", help="Bytes of one request body.")
    ] = 4 << 20,
    body_timeout: Annotated[
        float,
        typer.Option("--body-timeout", metavar="SECONDS", help="Time to receive one body."),
    ] = 10.0,
    max_key_bytes: Annotated[
        int,
        typer.Option(
            "--max-key-bytes",
            metavar="BYTES",
            help="Bytes of one key (UTF-8) at most; a longer key is refused, not stored.",
        ),
    ] = 256,
    no_queue: NoQueueOption = False,
    grace: GraceOption = "none",
    indistinguishable: IndistinguishableOption = False,
    share: ShareOption = None,
    metric: MetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = DEFAULT_DRAWS,
    threshold: ThresholdOption = None,
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
    settings = table.settings()
    if table.weight or settings.get("weight"):
        raise InputError(
            "serve cannot take a weight column: it decides on one record per request (give "
            "it a table with one line per record)."
        )
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
    from distgate.gate.settings import gate_settings

    chosen = gate_settings(
        settings,
        metric=metric,
        alpha=alpha,
        critical=critical,
        seed=seed,
        draws=draws,
        threshold=threshold,
        no_queue=no_queue,
        grace=grace,
        indistinguishable=indistinguishable,
        share=share,
    )
    tokens = load_tokens(operator_token_file, requester_tokens)
    if tokens.open and not is_loopback(host):
        raise InputError(
            f"Listening on {host}, which is not a loopback address, needs tokens: give "
            "--operator-token-file and --requester-tokens (or their environment variables)."
        )
    from distgate.data.config import split_names

    shown = split_names(columns)

    def load():
        from distgate.workflows.durable_session import DurableSession

        inputs, reading = table.read(settings, need_keys=True)
        print_notes(reading)
        return DurableSession(inputs, chosen, state, columns=shown)

    limits = Limits(
        max_batch=max_batch,
        max_body=max_body,
        body_timeout=body_timeout,
        max_key_bytes=max_key_bytes,
    )
    code = run(load, tokens, ServeOptions(host=host, port=port, limits=limits))
    if code:
        raise typer.Exit(code)
