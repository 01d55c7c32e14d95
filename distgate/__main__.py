"""The entry point of the ``distgate`` command and of ``python -m distgate``.

Ctrl-C or SIGTERM while the command line is still being loaded (its modules take a few
tenths of a second to import) ends the process with distgate's sentence and exit code
(130, 143), not a traceback from the middle of an import: handlers are set before
anything heavy is imported, and the command line's own take over once it runs.
"""

import os
import signal
import sys


def _stopped_while_starting(number, frame) -> None:
    sys.stderr.write("distgate: interrupted while starting; nothing was done.\n")
    sys.stderr.flush()
    os._exit(130 if number == signal.SIGINT else 143)


def main() -> None:
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, _stopped_while_starting) for number in signals}
    from distgate.cli import main as run_command_line

    for number, handler in previous.items():
        signal.signal(number, handler)
    run_command_line()


if __name__ == "__main__":
    main()
