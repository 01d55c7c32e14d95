"""``distgate replay``: run the online gate over a request log."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    DEFAULT_ALPHA,
    DEFAULT_CRITICAL,
    AlphaOption,
    AttrOption,
    BaselineOption,
    BinsOption,
    ConfigOption,
    CriticalOption,
    DelimiterOption,
    DrawsOption,
    EncodingOption,
    EngineOption,
    IdOption,
    JsonOption,
    MetricOption,
    MissingOption,
    OrderOption,
    QuietOption,
    SchedulerOption,
    SeedOption,
    TableArgument,
    TargetOption,
    ThresholdOption,
    handles_bad_input,
    metric_setting,
    table_inputs,
)
from distgate.cli.output import FormatOption, ReportOption, describe, output_format, show
from distgate.data.atomic import check_outputs
from distgate.errors import InputError


@handles_bad_input
def replay_command(
    context: typer.Context,
    table: TableArgument,
    requests: Annotated[
        str,
        typer.Argument(
            metavar="REQUESTS", help="Request log CSV, rows in arrival order ('-' = stdin)."
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the decisions CSV here."),
    ] = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state", metavar="FILE", help="SQLite file keeping the gate's state between replays."
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="Wait for another replay on the same --state to finish."),
    ] = False,
    key: Annotated[
        str, typer.Option("--key", metavar="COLUMN", help="Key column of the request log.")
    ] = "id",
    no_queue: Annotated[
        bool, typer.Option("--no-queue", help="Deny unsafe requests instead of queueing them.")
    ] = False,
    grace: Annotated[
        str,
        typer.Option(
            "--grace",
            metavar="POLICY",
            help="Grace policy: none, releases:K, fraction:F, values:V or accuracy:EPS.",
        ),
    ] = "none",
    skip_unknown: Annotated[
        bool,
        typer.Option("--skip-unknown", help="Mark keys the table lacks as unknown and go on."),
    ] = False,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.png",
            help="Write a plot: the first metric's statistic and critical value against "
            "released tuples.",
        ),
    ] = None,
    attr: AttrOption = None,
    target: TargetOption = None,
    id: IdOption = None,
    bins: BinsOption = None,
    missing: MissingOption = None,
    engine: EngineOption = None,
    scheduler: SchedulerOption = None,
    weight: Annotated[
        str | None,
        typer.Option("--weight", "-w", metavar="COLUMN", hidden=True),
    ] = None,
    order: OrderOption = None,
    delimiter: DelimiterOption = None,
    encoding: EncodingOption = None,
    baseline: BaselineOption = None,
    metric: MetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = 10_000,
    threshold: ThresholdOption = None,
    config: ConfigOption = None,
    format: FormatOption = None,
    json: JsonOption = False,
    report: ReportOption = None,
    quiet: QuietOption = False,
) -> None:
    """Replay REQUESTS through the release gate and summarise the decisions per target.

    Example: distgate replay soldiers.csv requests.csv -o decisions.csv --state gate.db
    """
    from distgate.data.config import load_config, setting
    from distgate.gate.core import load_kernel_in_background
    from distgate.gate.replay import Interrupted, ReplaySettings, replay
    from distgate.report.common import progress

    if table == "-" and requests == "-":
        raise InputError(
            "The table and the request log cannot both be read from standard input: "
            "give one of them as a file."
        )
    chosen = output_format(format, json, stdout_taken=output == "-")
    check_outputs([table, requests, state], [output, plot, report])
    check_outputs([table, requests], [state])
    settings = load_config(config)
    if weight or settings.get("weight"):
        raise InputError(
            "replay cannot take a weight column: it decides on one record per request, and "
            "a weighted line stands for several records that a request log cannot name one "
            "by one (give replay a table with one line per record)."
        )
    load_kernel_in_background(before=_load_key_index)  # while the inputs are read
    replay_settings = ReplaySettings(
        metrics=metric_setting(metric, settings).split(","),
        alpha=setting(alpha, settings, "alpha", DEFAULT_ALPHA),
        critical=setting(critical, settings, "critical", DEFAULT_CRITICAL),
        seed=setting(seed, settings, "seed", 0),
        draws=draws,
        threshold=threshold,
        queue=not no_queue,
        grace=grace,
        key=key,
        skip_unknown=skip_unknown,
    )
    inputs = table_inputs(
        table,
        settings,
        attr=attr,
        target=target,
        id=id,
        bins=bins,
        baseline=baseline,
        need_keys=True,
        missing=missing,
        engine=engine,
        scheduler=scheduler,
        quiet=quiet or json,
        order=order,
        delimiter=delimiter,
        encoding=encoding,
    )
    with progress(quiet or chosen != "table") as bar:
        task = bar.add_task("replay", total=None)
        try:
            result = replay(
                inputs,
                requests,
                replay_settings,
                decisions=output,
                state=state,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                wait=wait,
            )
        except Interrupted as stop:
            typer.echo(
                f"distgate: interrupted after {stop.done} requests of this log; run the same "
                "command to continue.",
                err=True,
            )
            raise typer.Exit(128 + stop.signal) from None
    from distgate.report.replay import plot_evolution, replay_report

    if plot:
        plot_evolution(result, plot)
    shown = replay_report(result, output, plot)
    describe(shown, context, [table, requests, baseline], settings)
    show(
        shown,
        chosen,
        lambda: {**result.to_dict(output, state), "engine": inputs.engine},
        stderr=output == "-",
        html=report,
    )


def _load_key_index() -> None:
    """numba and the key index's compiled code, imported and loaded in the loading thread."""
    from distgate.data.key_index import load_compiled

    load_compiled()
