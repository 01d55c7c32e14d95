"""The one error type for bad input.

Raised deep (in readers, parsers, validators) with the sentence the user will see; the CLI
turns it into exit code 2 in one place, so no bad input ever ends in a traceback.
"""


class InputError(Exception):
    """Bad input or bad usage. ``str(error)`` is one complete sentence naming the file,
    row or column and what is wrong."""
