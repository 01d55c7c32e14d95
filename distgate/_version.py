"""distgate's version, on the ground floor: the package's door names it, and the HTML
report and ``--version`` print it."""

__version__ = "0.1.0"
