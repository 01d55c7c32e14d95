"""Which table to read and how, as the user gives it: :class:`TableSpec`, declared once.

Each field is a keyword of the Python API (``distgate.assess(table, attributes="age")``)
and a flag of the command line (``--attr age``); ``None`` means not given. A field's
metadata (:class:`Flag`) says how the command line offers it (its flags, metavar and
help: :mod:`distgate.cli.options` builds the options from it); the settings file's key of
the same name (``distgate.toml``) serves when it is not given. So a new table option is
one field here (and its rule in :meth:`TableSpec.options`).

:meth:`TableSpec.options` resolves the spec against the settings file into the
:class:`~distgate.data.config.TableOptions` the readers take; :meth:`TableSpec.read`
reads the table and says how (:class:`TableReading`: the engine chosen by ``auto``, the
records left out by ``missing="drop"``), as data: the library never prints, the command
line prints the notes on stderr.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from distgate.errors import InputError

if TYPE_CHECKING:
    from distgate.data.config import TableOptions
    from distgate.data.inputs import Inputs

FLAG = "flag"  # the metadata key of a field's Flag
Names = str | Sequence[str] | None  # a column name, a list, or "age,sex"
# bins or order: {"age": [18, 20]}, "age=18,20" or a list of such texts
Assignments = Mapping[str, Sequence[Any]] | str | Sequence[str] | None


@dataclass(frozen=True)
class Flag:
    """How a table option is offered on the command line and in the settings file.

    ``names``: the option's flags (none: the positional argument); ``repeat``: a list,
    the flag repeated or comma-separated; ``parameter``: the command's parameter name when
    it is not the field's (the report lists the options by it); ``setting``: the settings
    file's key when it is not the field's name (``[[view]]`` tables for ``views``)."""

    names: tuple[str, ...]
    metavar: str
    help: str
    repeat: bool = False
    parameter: str | None = None
    setting: str | None = None


def _given(*names: str, metavar: str, help: str, **more: Any) -> Any:
    """A table option: not given (None) unless the user gives it."""
    return field(default=None, metadata={FLAG: Flag(names, metavar, help, **more)})


@dataclass(frozen=True)
class TableSpec:
    """The table and the options that say how to read it, as given (None: not given).

    ``table`` is a file name (``-``: standard input) or a table in memory
    (:mod:`distgate.data.frames`); ``attributes`` and ``targets`` a column name or a list
    (``"age,sex"`` too); ``bins`` and ``order`` a mapping (``{"age": [18, 20]}``) or the
    flag's texts (``"age=18,20"``); ``baseline`` a file, a table in memory, or a
    :class:`~distgate.data.baseline.Baseline` (or a profile holding one); ``config`` a
    settings file; ``views`` several groupings of the table to protect at once (SPEC 4.1:
    ``"rank@branch"`` texts, (x, y) pairs, :class:`~distgate.data.views.View` objects or
    mappings with ``x``, ``y``, ``bins``, ``baseline`` and ``missing``), instead of
    ``attributes`` and ``targets``. ``local_config``: with no ``config``, read
    ``./distgate.toml`` when there is one, as the command line does (a function reads no
    settings file unless it is named)."""

    table: Any = _given(
        metavar="TABLE",
        help="Table with a header: CSV/TSV (compressed or not), Parquet file or folder, or "
        "Excel .xlsx ('-' = stdin).",
    )
    attributes: Names = _given(
        "--attr",
        "-x",
        metavar="COLUMN",
        help="Attribute column(s) X; repeat or comma-separate.",
        repeat=True,
        parameter="attr",
    )
    targets: Names = _given(
        "--target",
        "-y",
        metavar="COLUMN",
        help="Target column(s) Y; repeat or comma-separate.",
        repeat=True,
        parameter="target",
    )
    id: str | None = _given(
        "--id",
        metavar="COLUMN",
        help="Record key column (default: the row number from 0).",
    )
    bins: Assignments = _given(
        "--bins",
        metavar="COLUMN=EDGES",
        help="Cut a numeric attribute into ranges, e.g. age=18,20,25,30.",
        repeat=True,
    )
    missing: str | None = _given(
        "--missing",
        metavar="MODE",
        help="A record with a missing attribute or target value: error (the default), drop "
        "it, or keep 'missing' as a value of its own.",
    )
    engine: str | None = _given(
        "--engine",
        metavar="ENGINE",
        help="Who counts the table: auto (arrow for a file that fits in memory, duckdb "
        "otherwise), arrow, duckdb (out of core; CSV, Parquet, folders, globs) or dask (a "
        "cluster) [default: auto].",
    )
    scheduler: str | None = _given(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler for --engine dask, e.g. tcp://host:8786 (default: "
        "DASK_SCHEDULER_ADDRESS, else a local cluster on this machine's cores).",
    )
    weight: str | None = _given(
        "--weight",
        "-w",
        metavar="COLUMN",
        help="Column of whole-number counts: each line stands for that many identical "
        "records (a frequency table).",
    )
    order: Assignments = _given(
        "--order",
        metavar="COLUMN=VALUES",
        help="Order of a column's values, e.g. educ=Low,Middle,High (default: numbers and "
        "ranges like 18-19 by number, text alphabetically; a baseline file's order wins).",
        repeat=True,
    )
    delimiter: str | None = _given(
        "--delimiter",
        "-d",
        metavar="CHAR",
        help="Field delimiter of text input: one character, or tab (default: tab for .tsv "
        "names, else a comma).",
    )
    encoding: str | None = _given(
        "--encoding",
        metavar="NAME",
        help="Text encoding of the input, e.g. latin-1, cp1252, utf-16 (default: utf-8).",
    )
    baseline: Any = _given(
        "--baseline",
        "-b",
        metavar="FILE",
        help="Baseline file (default: the table's own X distribution).",
    )
    config: str | os.PathLike | None = _given(
        "--config",
        metavar="FILE",
        help="Settings file (default: ./distgate.toml if present).",
    )
    views: Any = _given(
        "--view",
        metavar="X@Y",
        help="A view to protect: attribute column(s) X grouped by target column(s) Y, "
        "several of one side joined with '+', e.g. rank@branch+gender; repeat for several "
        "views, all protected at once (instead of -x/-y; distgate.toml: [[view]] tables).",
        repeat=True,
        parameter="view",
        setting="view",
    )
    local_config: bool = False

    def settings(self) -> dict[str, Any]:
        """The settings file's values: ``config``'s, else (``local_config``)
        ./distgate.toml's when there is one, else none."""
        from distgate.data.config import load_config

        if self.config is None and not self.local_config:
            return {}
        return load_config(None if self.config is None else os.fspath(self.config))

    @property
    def files(self) -> list[str]:
        """The input files named (the table and the baseline), for the checks that no
        output overwrites one."""
        return [os.fspath(s) for s in (self.table, self.baseline) if _is_path(s)]

    @property
    def source(self) -> Any:
        """The table as the readers take it: a path as text, a table in memory as a
        :class:`~distgate.data.frames.FrameSource`."""
        if _is_path(self.table):
            return os.fspath(self.table)
        from distgate.data.frames import table_source

        return table_source(self.table)

    def given(self) -> dict[str, Any]:
        """The table options (all but the table and the settings file) in the command
        line's forms: a list option as a list of texts (a mapping of bins or orders as it
        is), None where not given."""
        given = {
            name: _as_flag(getattr(self, name)) if flag.repeat else getattr(self, name)
            for name, flag in FLAGS.items()
            if name not in ("table", "config", "views")
        }
        views = self.views  # texts, View objects, (x, y) pairs or mappings, as they are
        given["views"] = [views] if isinstance(views, str) else views
        return given

    def options(self, settings: dict[str, Any]) -> TableOptions:
        """The options the readers take: each one given over the settings file's over the
        default (:class:`~distgate.data.config.TableOptions`'s). The file's bins and orders
        serve the columns in use (the spec may name other columns); a bin or order the spec
        gives for a column not in use is still an error. InputError when no attribute or
        target column is named anywhere."""
        from distgate.data.config import TableOptions, split_names, text_format
        from distgate.data.values import parse_bins, parse_order

        given = self.given()
        given["baseline"] = _baseline_source(self.baseline)
        views = _chosen_views(settings, given)
        table_missing = given["missing"] or settings.get("missing") or "error"
        if views:  # the first view's columns are the options' own
            first = views[0]
            given["attributes"], given["targets"] = list(first.attributes), list(first.targets)
            given["baseline"] = first.baseline or given["baseline"]
            given["missing"] = first.missing or given["missing"]
        attributes = split_names(given["attributes"]) or list(settings.get("attributes") or [])
        targets = split_names(given["targets"]) or list(settings.get("targets") or [])
        for role, named in (("attributes", attributes), ("targets", targets)):
            if not named:
                raise InputError(self._none_named(role))
        file_bins, flag_bins = parse_bins(settings.get("bins")), parse_bins(given["bins"])
        bins = {c: e for c, e in file_bins.items() if c in attributes}
        bins.update(flag_bins)
        used = {*attributes, *targets} | {c for v in views for c in (*v.attributes, *v.targets)}
        order = {c: v for c, v in parse_order(settings.get("order")).items() if c in used}
        order.update(parse_order(given["order"]))
        fmt = text_format(settings, given["delimiter"], given["encoding"])
        chosen = {
            option: value
            for option, name in (
                ("id_column", "id"),
                ("baseline", "baseline"),
                ("missing", "missing"),
                ("engine", "engine"),
                ("weight", "weight"),
            )
            if (value := given[name] or settings.get(name)) is not None
        }  # those left out take TableOptions' defaults
        if len(views) > 1:  # each view's bins: the file's, the flags', its own
            views = tuple(_view_options(v, file_bins, flag_bins, table_missing) for v in views)
            unused = [c for c in flag_bins if not any(c in v.attributes for v in views)]
            if unused:
                raise InputError(f"Bins are given for '{unused[0]}', which no view's attribute is.")
            bins = dict(views[0].bins)
            chosen["missing"] = views[0].missing
        elif views:
            bins.update(views[0].bins_dict)
        scheduler = given["scheduler"] or settings.get("scheduler")
        return TableOptions(
            source=self.source,
            attributes=tuple(attributes),
            targets=tuple(targets),
            bins=tuple((c, tuple(e)) for c, e in bins.items()),
            scheduler=scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS"),
            order=tuple((c, tuple(v)) for c, v in order.items()),
            delimiter=fmt.delimiter,
            encoding=fmt.encoding,
            views=views if len(views) > 1 else (),
            **chosen,
        )

    def read(
        self,
        settings: dict[str, Any] | None = None,
        *,
        need_keys: bool = False,
        counts_only: bool = False,
    ) -> tuple[Inputs, TableReading]:
        """Read the table (and its baseline) with :meth:`options` over ``settings``
        (default: :meth:`settings`): the encoded records, their counts C[y, x] and the
        baseline (:func:`~distgate.data.inputs.load_inputs`; ``need_keys`` keeps each
        record's key, ``counts_only`` counts the records by their distinct values), and
        how it was read."""
        from distgate.data.inputs import load_inputs

        settings = self.settings() if settings is None else settings
        options = self.options(settings)
        inputs = load_inputs(options, need_keys=need_keys, counts_only=counts_only)
        reading = TableReading(
            settings,
            engine=inputs.engine,
            engine_reason=inputs.engine_reason,
            engine_asked=options.engine,
            dropped=inputs.table.dropped,
        )
        return inputs, reading

    def _none_named(self, role: str) -> str:
        """The sentence for an attribute or target column named nowhere, saying where one
        is named (by the flag on the command line, by the keyword in Python)."""
        what = "attribute" if role == "attributes" else "target"
        if self.local_config:
            flag = "/".join(reversed(FLAGS[role].names))
            return f"No {what} column given: name one with {flag} or in distgate.toml."
        return (
            f"No {what} column given: name one with {role}=... (or in the settings file that "
            "config names)."
        )


@dataclass(frozen=True)
class TableReading:
    """How a table was read: the settings file's values (empty without one), the engine
    that counted it and why, the engine asked for, and the records left out for a missing
    value (``missing="drop"``)."""

    settings: dict[str, Any] = field(default_factory=dict)
    engine: str = "arrow"
    engine_reason: str = ""
    engine_asked: str = "auto"
    dropped: int = 0

    @property
    def engine_note(self) -> str | None:
        """An out-of-core engine chosen by auto, and why (one asked for needs no note)."""
        if self.engine in (self.engine_asked, "arrow"):
            return None
        return f"counted with the {self.engine} engine ({self.engine_reason})."

    @property
    def dropped_note(self) -> str | None:
        """The records left out for a missing value, when there are any."""
        if not self.dropped:
            return None
        return f"left out {self.dropped} records with a missing value (--missing drop)."

    def notes(self) -> list[str]:
        """What the command line notes on stderr (:attr:`engine_note`,
        :attr:`dropped_note`)."""
        return [note for note in (self.engine_note, self.dropped_note) if note]

    def to_dict(self) -> dict[str, Any]:
        """What a command's ``--json`` document says about the reading."""
        return {"dropped_missing": self.dropped, "engine": self.engine}


# each table option's Flag by field name, in the order of the fields
FLAGS: dict[str, Flag] = {
    f.name: f.metadata[FLAG] for f in dataclasses.fields(TableSpec) if FLAG in f.metadata
}
# the keywords that say how to read a table (a function's ``**table_keywords``)
TABLE_KEYWORDS = tuple(name for name in FLAGS if name != "table")


def table_spec(
    table: Any,
    keywords: Mapping[str, Any],
    function: str,
    taken: Sequence[str] = TABLE_KEYWORDS,
    also: Mapping[str, Sequence[str]] | None = None,
) -> TableSpec:
    """The spec of a function's table argument and its table keywords: ``table`` is a
    :class:`TableSpec` (the keywords given replace its fields) or what a spec's ``table``
    holds. ``taken``: the table keywords ``function`` takes; TypeError naming them for any
    other keyword given (or field set), as Python's own for an unknown keyword, and the
    keywords of each other kind it takes (``also``: ``{"gate": (...)}``), taken apart
    before."""
    unknown = [name for name in keywords if name not in taken]
    if isinstance(table, TableSpec):  # a field set that the function does not take
        unknown += [n for n in TABLE_KEYWORDS if n not in taken and getattr(table, n) is not None]
    if unknown:
        kinds = [("table", taken), *(also or {}).items()]
        listed = "; ".join(f"its {kind} keywords are: {', '.join(names)}" for kind, names in kinds)
        raise TypeError(
            f"{function}() got an unexpected keyword argument '{unknown[0]}' ({listed})"
        )
    if isinstance(table, TableSpec):
        return dataclasses.replace(table, **keywords)
    return TableSpec(table, **keywords)


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _as_flag(value: Any) -> Any:
    """A list option in the form its flag gives: a name or ``"age=18,20"`` as a list of
    one, a list as a list of texts; a mapping (bins, order) as it is."""
    if value is None or isinstance(value, Mapping):
        return value
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _baseline_source(value: Any) -> Any:
    """A baseline file's name, a table in memory, or a Baseline (or a profile's) as the
    table of its values and probabilities."""
    if value is None or _is_path(value):
        return None if value is None else os.fspath(value)
    from distgate.data.baseline import Baseline

    held = getattr(value, "baseline", None)  # the profile of distgate.baseline holds one
    if isinstance(held, Baseline):
        value = held
    if isinstance(value, Baseline):
        return value.as_source()
    from distgate.data.frames import table_source

    return table_source(value)


def _view_options(view: Any, file_bins: dict, flag_bins: dict, missing: str) -> Any:
    """A view of several with the bins of its attributes (the file's, then the flags',
    then its own) and its missing values (its own, else the table's)."""
    bins = {c: e for c, e in file_bins.items() if c in view.attributes}
    bins.update({c: e for c, e in flag_bins.items() if c in view.attributes})
    bins.update(view.bins_dict)
    return dataclasses.replace(
        view,
        bins=tuple((c, tuple(e)) for c, e in bins.items()),
        missing=view.missing or missing,
    )


def _chosen_views(config: dict[str, Any], given: dict[str, Any]) -> tuple:
    """The views given (``--view``, the ``views`` keyword), else the settings file's
    unless -x or -y is given; () for the one view of -x and -y."""
    flags = given.get("views")
    from distgate.data.config import split_names
    from distgate.data.views import check_views, view_of

    named = split_names(given.get("attributes")) or split_names(given.get("targets"))
    if flags:
        if named:
            raise InputError(
                "Give the views with --view only: -x and -y name one view (the same as --view X@Y)."
            )
        views = tuple(view_of(v, "--view") for v in flags)
    elif not named and config.get("view"):
        views = tuple(config["view"])
    else:
        return ()
    if given.get("baseline") and len(views) > 1:
        raise InputError(
            "--baseline is one view's baseline: with several views give each its own in the "
            "[[view]] tables of distgate.toml (or in the views keyword's mappings)."
        )
    check_views(views)
    return views
