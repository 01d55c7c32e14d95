"""distgate: release records without revealing a sensitive property of an entity through
the distribution of the released values.

The package is a library first; the ``distgate`` command is a thin layer over it. Heavy
numeric modules are imported by the submodules that need them, never here, so that
``distgate --help`` starts fast.
"""

__version__ = "0.1.0"
