"""The ``distgate`` command: a Typer app whose commands live one per module in this
package. Each command parses options, calls one library function and prints; no
statistics are computed here."""

from __future__ import annotations

import importlib
import sys

import typer

# (command name, module in distgate.cli, function) in the order `--help` lists them.
COMMANDS: list[tuple[str, str, str]] = [
    ("baseline", "baseline", "baseline_command"),
    ("assess", "assess", "assess_command"),
    ("audit", "audit", "audit_command"),
    ("randomize", "randomize", "randomize_command"),
    ("replay", "replay", "replay_command"),
    ("simulate", "simulate", "simulate_command"),
    ("serve", "serve", "serve_command"),
    ("calibrate", "calibrate", "calibrate_command"),
]
# (group name, module in distgate.cli holding its Typer app ``app``): commands of their own,
# as ``distgate state inspect FILE``
GROUPS: list[tuple[str, str]] = [("state", "state")]
HELP = (
    "Decide whether records can be released without letting an observer infer a "
    "sensitive property of an entity from the distribution of released values."
)


def _version(value: bool) -> None:
    if value:
        from distgate import __version__

        typer.echo(f"distgate {__version__}")
        raise typer.Exit()


def _options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Decide whether records can be released without letting an observer infer a
    sensitive property of an entity from the distribution of released values."""


def make_app(only: str | None = None) -> typer.Typer:
    """The command line, with every command, or with the command ``only`` alone: a command
    line that runs one command imports that command's module and not the others' (each
    module declares its command's options, and importing them all cost a tenth of a small
    command's time). Usage errors, help and behaviour are the same either way."""
    app = typer.Typer(
        name="distgate",
        help=HELP,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help text: rendering it with rich doubles start-up time
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_options)
    for name, module, function in COMMANDS:
        if only is None or name == only:
            command = getattr(importlib.import_module(f"distgate.cli.{module}"), function)
            app.command(name)(command)
    for name, module in GROUPS:
        if only is None or name == only:
            app.add_typer(importlib.import_module(f"distgate.cli.{module}").app, name=name)
    return app


_APP: typer.Typer | None = None


def __getattr__(name: str):
    """``app``, the command line with every command, made on first use."""
    global _APP
    if name == "app":
        if _APP is None:
            _APP = make_app()
        return _APP
    raise AttributeError(f"module 'distgate.cli' has no attribute {name!r}")


class Stopped(BaseException):
    """SIGINT (Ctrl-C) or SIGTERM, raised in the command's place so that temporary files go
    and the command line, not typer (which turns a KeyboardInterrupt into a silent exit
    130), says what the command wrote."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _stopped(number, frame) -> None:
    raise Stopped(number)


def main() -> None:
    """Console-script entry point: :func:`run` the command line with pyarrow's looks for
    pandas refused, then leave at once (both workarounds are explained in
    :mod:`distgate._runtime`)."""
    from distgate._runtime import exit_now, refuse_pandas_probes

    refuse_pandas_probes()
    exit_now(run())


def run(argv: list[str] | None = None) -> int:
    """Run one command line (default: the process's arguments) and return its exit code.
    Usage errors (an unknown option, a missing argument, a value of the wrong type) get
    distgate's one error style too: one sentence on stderr, exit code 2. Ctrl-C and
    SIGTERM end a command with one sentence saying what it wrote and exit code 130 or 143
    (a signal the process was started ignoring stays ignored)."""
    import signal

    previous = {}
    if threading_is_main():
        for number in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(number) is not signal.SIG_IGN:
                previous[number] = signal.signal(number, _stopped)
    try:
        return _run(argv if argv is not None else sys.argv[1:])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _run(argv: list[str]) -> int:
    from distgate.data.atomic import written_count

    files_before = written_count()
    names = {name for name, _, _ in COMMANDS} | {name for name, _ in GROUPS}
    chosen = make_app(only=argv[0]) if argv and argv[0] in names else __getattr__("app")
    try:
        code = chosen(args=argv, standalone_mode=False)  # a typer.Exit comes back as its code
    except typer.Exit as exc:
        return exc.exit_code
    except Stopped as stop:
        from distgate.cli.interrupted import interrupted_message

        typer.echo(interrupted_message(chosen, argv, files_before), err=True)
        return 128 + stop.number
    except typer.TyperException as exc:  # click's usage errors, vendored by typer
        if type(exc).__name__ == "NoArgsIsHelpError":
            typer.echo(exc.format_message())
            return 0
        context = getattr(exc, "ctx", None)
        command = context.command_path if context is not None else "distgate"
        from distgate.report.labels import shown  # a value given may hold control characters

        message = shown(exc.format_message().rstrip("."))
        typer.echo(f"distgate: {message} (see '{shown(command)} --help').", err=True)
        return getattr(exc, "exit_code", 2)
    return code if isinstance(code, int) else 0


def threading_is_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
