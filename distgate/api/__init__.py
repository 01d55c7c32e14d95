"""The functions a pandas user reaches for, those of the ``distgate`` commands:
:func:`assess` (with the classic models :func:`k_anonymity`, :func:`l_diversity` and
:func:`t_closeness`), :func:`baseline`, :func:`audit`, :func:`randomize`,
:func:`calibrate`, :func:`replay`, :func:`open_gate` (and :func:`gate_opener`),
:func:`simulate`, and for a gate's state file :func:`inspect_state`, :func:`verify_state`
and :func:`export_state`, each importable from ``distgate`` itself. Every command calls
its function: it parses its flags, calls it once and prints what it returns. One module
per concern: :mod:`~distgate.api.release` (a whole release: assess, the classic models,
baseline, audit), :mod:`~distgate.api.randomization`, :mod:`~distgate.api.calibration`,
:mod:`~distgate.api.workflows` (the online gate: replay, open_gate, simulate) and
:mod:`~distgate.api.state`. Importing this package loads no numeric library: each
function imports what it uses.

Each takes the table as a file name (CSV or TSV, compressed or not, Parquet, Excel; ``-``
for standard input) or as a table in memory: a pandas or polars DataFrame, a pyarrow
Table, or any object with the Arrow PyCapsule stream interface (``__arrow_c_stream__``) or
the dataframe interchange protocol (``__dataframe__``). The *table keywords* that follow
say how to read it; they are named like the command line's flags and mean the same:

- ``attributes`` and ``targets`` (``-x`` and ``-y``): a column name or a list of them;
- ``id``: the record key column (default: the row number from 0);
- ``bins``: ``{"age": [18, 20, 25]}`` or ``["age=18,20,25"]``; ``order``:
  ``{"educ": ["Low", "Middle", "High"]}`` or ``["educ=Low,Middle,High"]``;
- ``baseline``: a baseline file, a table in memory with the same columns, or the
  :class:`~distgate.data.baseline.Baseline` of an earlier :func:`baseline` (or the
  profile itself; default: the table's own distribution of X);
- ``missing`` (``"error"``, ``"drop"`` or ``"keep"``), ``weight``, ``delimiter``,
  ``encoding``, ``engine``, ``scheduler``;
- ``config``: a settings file (``distgate.toml``) whose values serve where a keyword is
  not given. Unlike the command line, no settings file is read unless it is named.

The functions of the online gate take the *gate keywords* too, the options of
:class:`~distgate.gate.settings.GateSettings`, declared once with replay's flags (see
:mod:`distgate.api.workflows`).

The table and its keywords can also be given as one
:class:`~distgate.data.spec.TableSpec` (``TableSpec("soldiers.csv", attributes="age",
targets="location")``), which several calls can share; keywords given beside a spec
replace its fields. A keyword that is neither a function's own nor a table keyword it
takes is a TypeError naming them.

Bad input raises :class:`~distgate.errors.InputError` with the sentence the command line
prints before exiting with code 2 (it names the flag, which is the keyword of the same
name). The results have ``to_dict()`` (the command's ``--json`` document) and, where they
are tables, ``to_pandas()``/``to_arrow()``; a result read from a table says how
(``reading``: the settings file's values, the engine that counted it, the records left
out by ``missing="drop"``).
"""

from distgate.api.calibration import calibrate
from distgate.api.randomization import randomize
from distgate.api.release import assess, audit, baseline, k_anonymity, l_diversity, t_closeness
from distgate.api.state import export_state, inspect_state, verify_state
from distgate.api.workflows import gate_opener, open_gate, replay, simulate
from distgate.data.spec import TableSpec
from distgate.errors import InputError

__all__ = [
    "InputError",
    "TableSpec",
    "assess",
    "audit",
    "baseline",
    "calibrate",
    "export_state",
    "gate_opener",
    "inspect_state",
    "k_anonymity",
    "l_diversity",
    "open_gate",
    "randomize",
    "replay",
    "simulate",
    "t_closeness",
    "verify_state",
]
