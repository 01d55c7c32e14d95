"""Where ``--plot PATH`` writes a command's figures, the same rule for every command:

* a path ending in ``.png``, ``.svg`` or ``.pdf`` is one file, in that format, holding one
  figure (the command's help says which, for a command that draws several);
* any other path is a folder (created if needed) holding every figure the command draws,
  each a PNG file named after the figure (``evolution_kld_alpha0.2.png``).

So ``simulate --plot frontier.png`` writes one picture named frontier.png, not a folder of
that name. The path is checked before any work (:func:`check_plot_path`); matplotlib is
imported only to draw.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from distgate.errors import InputError

IMAGE_SUFFIXES = (".png", ".svg", ".pdf")
# image formats a user may name, which --plot does not write (a folder of that name would
# surprise): refused rather than taken for a folder
OTHER_IMAGES = (".jpg", ".jpeg", ".gif", ".tif", ".tiff", ".webp", ".bmp", ".eps", ".ps")
DPI = 100  # of the PNG files


@dataclass(frozen=True)
class Figure:
    """One figure a command can draw: ``name`` is its file name in a folder (without the
    ``.png``), ``draw()`` returns the matplotlib figure."""

    name: str
    draw: Callable[[], Any]


def is_image_file(path: str | os.PathLike) -> bool:
    """Whether ``--plot path`` names one image file rather than a folder."""
    return os.path.splitext(os.fspath(path))[1].lower() in IMAGE_SUFFIXES


def check_plot_path(path: str | os.PathLike, flag: str = "--plot") -> None:
    """InputError, before any work, for a ``--plot`` path that cannot be written by the
    rule of the module docstring: an image format not written, an image file name that is
    an existing folder, a folder name that is an existing file, a missing parent folder."""
    text = os.fspath(path)
    suffix = os.path.splitext(text)[1].lower()
    shown = ", ".join(IMAGE_SUFFIXES[:-1]) + f" or {IMAGE_SUFFIXES[-1]}"
    if suffix in OTHER_IMAGES:
        raise InputError(
            f"{flag} writes {shown} files (or a folder of PNG files), not '{suffix}': '{text}'."
        )
    if is_image_file(text):
        if os.path.isdir(text):
            raise InputError(f"{flag} '{text}' names an image file, and it is a folder.")
    elif os.path.exists(text.rstrip(os.sep) or os.sep) and not os.path.isdir(text):
        raise InputError(
            f"{flag} '{text}' names a folder for the figures (or a {shown} file for one), "
            "and it is a file."
        )
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise InputError(f"The folder of {flag} '{text}' does not exist: '{parent}'.")


def figure_path(path: str | os.PathLike, figure: Figure | str) -> str:
    """The file ``figure`` is written to under ``--plot path``: ``path`` itself when it
    names an image file, else ``path/NAME.png``."""
    text = os.fspath(path)
    if is_image_file(text):
        return text
    name = figure.name if isinstance(figure, Figure) else figure
    return os.path.join(text, f"{name}.png")


def write_figures(
    figures: Sequence[Figure], path: str | os.PathLike, chosen: int = 0
) -> dict[str, str]:
    """Write ``figures`` by the rule of the module docstring: ``figures[chosen]`` alone when
    ``path`` names an image file, every figure into the folder ``path`` otherwise. Each
    file is written whole or not at all. Returns {figure name: file written}."""
    from distgate.data.atomic import atomic_path
    from distgate.report.plots import pyplot

    if is_image_file(path):
        figures = [figures[chosen]]
    else:
        os.makedirs(path, exist_ok=True)
    written = {}
    for figure in figures:
        target = figure_path(path, figure)
        drawn = figure.draw()
        try:
            with atomic_path(target) as tmp:
                fmt = os.path.splitext(target)[1][1:].lower()
                drawn.savefig(tmp, format=fmt, dpi=DPI)
        finally:
            pyplot().close(drawn)
        written[figure.name] = target
    return written
