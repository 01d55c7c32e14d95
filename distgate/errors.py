"""The library's error types: :class:`InputError` for bad input, :class:`Interrupted` for
a replay stopped by a signal.

An InputError is raised deep (in readers, parsers, validators) with the sentence the user
will see; the CLI turns it into exit code 2 in one place, so no bad input ever ends in a
traceback.
"""


class InputError(Exception):
    """Bad input or bad usage. ``str(error)`` is one complete sentence naming the file,
    row or column and what is wrong."""


class Interrupted(Exception):
    """A replay stopped by SIGINT or SIGTERM at a batch boundary (``done`` requests of the
    log are committed to the state; ``signal`` the signal's number)."""

    def __init__(self, done: int, signal: int, state: str | None) -> None:
        super().__init__(done, signal)
        self.done, self.signal, self.state = done, signal, state
