"""``distgate-pre-commit``: the entry of the pre-commit hook ``distgate-assess``
(``.pre-commit-hooks.yaml``): assess each candidate release file a commit touches.

pre-commit calls the entry with the hook's ``args`` followed by the names of the staged
files that match the hook's ``files`` pattern. Each file is assessed as ``distgate assess
FILE ARGS`` would assess it, one after the other; the hook fails when one is unsafe (exit
1) or cannot be assessed (exit 2, which wins), so that the commit stops.

The args are told from the file names by assess's own parser (an option that takes a
value, such as ``--baseline base.csv``, keeps it), so any option of ``distgate assess``
can be given in the hook's ``args``.
"""

from __future__ import annotations

import sys

import typer

from distgate.cli import make_app, run
from distgate.cli.common import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNSAFE
from distgate.errors import InputError

END = "\x00end of the hook's arguments"
VERDICTS = {EXIT_OK: "safe", EXIT_UNSAFE: "UNSAFE", EXIT_BAD_INPUT: "not assessed (bad input)"}


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """The options for ``distgate assess`` and the files (its positional arguments,
    which pre-commit appends last). Raises :class:`InputError` when the options are not
    those of assess, or a file name stands among them."""
    command = typer.main.get_command(make_app(only="assess")).commands["assess"]
    # an end marker stands for the files when there are none: TABLE is a required argument
    marked = [*argv, END]
    try:
        context = command.make_context("assess", list(marked), allow_extra_args=True)
    except typer.TyperException as exc:  # click's usage errors, vendored by typer
        raise InputError(f"{exc.format_message().rstrip('.')} (in the hook's args).") from None
    except typer.Exit:  # --help
        return [], []
    files = [context.params["table"], *context.args][:-1]
    if marked[-len(files) - 1 :] != [*files, END]:
        raise InputError(
            "The hook's args must be options of distgate assess; pre-commit adds the file "
            f"names after them (found '{files[0]}' among the options)."
        )
    options = list(argv[: len(argv) - len(files)])
    return (options[:-1] if options[-1:] == ["--"] else options), files


def check_files(argv: list[str]) -> int:
    """Assess every file named in ``argv`` (after the options); the worst exit code."""
    try:
        options, files = split_arguments(argv)
    except InputError as exc:
        typer.echo(f"distgate-pre-commit: {exc}", err=True)
        return EXIT_BAD_INPUT
    worst = EXIT_OK
    for path in files:
        typer.echo(f"== distgate assess {path}")
        code = run(["assess", *options, "--", path])  # '--': a file name may start with '-'
        if code not in VERDICTS:  # interrupted: stop here
            return code
        typer.echo(f"== {path}: {VERDICTS[code]}")
        worst = max(worst, code)
    return worst


def main() -> None:
    """Console-script entry point (see :func:`distgate.cli.main` for the workarounds)."""
    from distgate._runtime import exit_now, refuse_pandas_probes

    refuse_pandas_probes()
    exit_now(check_files(sys.argv[1:]))
