"""The one sentence a command stopped by Ctrl-C (SIGINT) or SIGTERM ends with: which of
its output files it wrote and which it did not.

Every output file is written whole and renamed into place (:mod:`distgate.data.atomic`),
so each is either complete or absent; the files written so far are those the process
noted, the outputs asked for are read again from the command line (``-o``, ``--plot``,
``--report``, ``--junit``, ``--summary``, ``--csv-dir``). replay's batch loop words its own
stop (how many requests it committed); a replay stopped outside it says what its ``--state``
file keeps. ``distgate serve`` stops on either signal as a server does, with exit code 0.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import typer

# the parameters of the commands that name an output file or folder
OUTPUT_PARAMETERS = ("output", "plot", "plots", "report", "junit", "summary", "csv_dir")
SHOWN = 3  # files named in the sentence at most


def interrupted_message(app: typer.Typer, argv: Sequence[str], since: int) -> str:
    """The sentence for the command line ``argv``, run by ``app``, stopped now; its files
    are those written after the mark ``since`` (:func:`distgate.data.atomic.written_count`)."""
    from distgate.data.atomic import written_files

    command = typer.main.get_command(app)
    words = list(argv)
    while hasattr(command, "commands") and words and words[0] in command.commands:
        command = command.commands[words.pop(0)]
    # parsed again as the command parsed them (resilient: no callback runs)
    params = command.make_context(command.name or "", words, resilient_parsing=True).params
    outputs = [params[p] for p in OUTPUT_PARAMETERS if params.get(p) not in (None, "", "-")]
    state = params.get("state") if command.name == "replay" else None
    if state is not None and not os.path.exists(state):
        state = None  # not made yet: nothing was committed
    return interrupted_sentence(outputs, written_files(since), state)


def interrupted_sentence(outputs: Sequence[str], written: Sequence[str], state: str | None) -> str:
    """The sentence (see the module docstring) for a command that asked for ``outputs`` and
    wrote ``written`` before it stopped; ``state``: replay's state file."""
    done = [os.path.normpath(w) for w in written]
    missing = [o for o in outputs if not any(_within(w, o) for w in done)]
    text = "distgate: interrupted before the command finished; "
    if written:
        text += f"it wrote {_names(written)}"
        text += f" but not {_names(missing)}" if missing else " and no other file"
    elif missing:
        verb = "was" if len(missing) == 1 else "were"
        text += f"it wrote no file ({_names(missing)} {verb} not written)"
    else:
        text += "it wrote no file"
    if state:
        text += f", and the state file '{state}' keeps every batch it committed"
    return text + "."


def _within(written: str, output: str) -> bool:
    """Whether the file ``written`` is the output ``output`` or lies in that folder."""
    folder = os.path.normpath(output)
    return written == folder or written.startswith(folder + os.sep)


def _names(paths: Sequence[str]) -> str:
    quoted = [f"'{p}'" for p in paths[:SHOWN]]
    if len(paths) > SHOWN:
        return ", ".join(quoted) + f" and {len(paths) - SHOWN} more"
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
