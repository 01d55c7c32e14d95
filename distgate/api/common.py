"""What the API's functions share: the kinds of their arguments."""

from __future__ import annotations

import os
from typing import Any

Table = Any  # a path, a table in memory (see distgate.api) or a TableSpec
File = str | os.PathLike


def path(value: File | None) -> str | None:
    """A file argument as text (None: not given)."""
    return None if value is None else os.fspath(value)
