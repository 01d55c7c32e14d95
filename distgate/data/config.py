"""``distgate.toml``: defaults for the table options so that a command needs no flags.

Looked up in the working directory (or given with ``--config FILE``). Keys: ``id``,
``attributes``, ``targets``, ``[bins]``, ``[order]``, ``weight``, ``missing``,
``delimiter``, ``encoding``, ``baseline``, ``metric``, ``alpha`` (and ``critical``,
``seed``, ``engine``, ``scheduler``), and ``[[view]]`` tables, one per view of the table
(SPEC 4.1: ``x``, ``y``, and optionally ``bins``, ``baseline``, ``missing``). Command-line
flags override the file. A relative ``baseline`` path is taken relative to the config
file's folder.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from distgate.defaults import DEFAULT_ALPHA, DEFAULT_CRITICAL, DEFAULT_METRIC, DEFAULT_SEED
from distgate.errors import InputError

CONFIG_NAME = "distgate.toml"


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_text_list(value: Any) -> bool:
    return _is_text(value) or (
        isinstance(value, list) and bool(value) and all(_is_text(v) for v in value)
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_order(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(values, list)
        and values
        and all(_is_text(v) for v in values)
        and len(set(values)) == len(values)
        for values in value.values()
    )


def _is_delimiter(value: Any) -> bool:
    from distgate.data.tables import check_delimiter

    try:
        return isinstance(value, str) and bool(check_delimiter(value))
    except InputError:
        return False


def _is_encoding(value: Any) -> bool:
    import codecs

    try:
        return _is_text(value) and bool(codecs.lookup(value.strip()))
    except LookupError:
        return False


def _is_bins(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(edges, list) and edges and all(_is_number(e) for e in edges)
        for edges in value.values()
    )


# what each key must hold: a check and the words the error message uses
VALIDATORS: dict[str, tuple[Any, str]] = {
    "id": (_is_text, "a column name in quotes"),
    "attributes": (_is_text_list, "a column name or a list of column names"),
    "targets": (_is_text_list, "a column name or a list of column names"),
    "bins": (_is_bins, "a table [bins] of COLUMN = [edges, as numbers]"),
    "baseline": (_is_text, "a file path in quotes"),
    "metric": (_is_text_list, 'metric names in quotes, e.g. "kld,cst"'),
    "alpha": (lambda v: _is_number(v) and 0 < v < 1, "a number strictly between 0 and 1"),
    "critical": (
        lambda v: v in ("auto", "auto-paper", "asymptotic", "mc"),
        '"auto", "auto-paper", "asymptotic" or "mc"',
    ),
    "missing": (lambda v: v in ("error", "drop", "keep"), '"error", "drop" or "keep"'),
    "engine": (
        lambda v: v in ("auto", "arrow", "duckdb", "dask"),
        '"auto", "arrow", "duckdb" or "dask"',
    ),
    "scheduler": (_is_text, 'a Dask scheduler address in quotes, e.g. "tcp://host:8786"'),
    "weight": (_is_text, "a column name in quotes"),
    "order": (_is_order, "a table [order] of COLUMN = [distinct values, in quotes]"),
    "delimiter": (_is_delimiter, 'one character in quotes, e.g. ";" or "\\t" (or "tab")'),
    "encoding": (_is_encoding, 'an encoding Python knows, e.g. "latin-1" or "utf-16"'),
    "seed": (
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        "a whole number >= 0",
    ),
    "view": (
        lambda v: isinstance(v, list) and bool(v) and all(isinstance(t, dict) for t in v),
        "[[view]] tables, each with x and y (and optionally bins, baseline, missing)",
    ),
}
KNOWN_KEYS = frozenset(VALIDATORS)


def _line_of(text: str, key: str) -> int | None:
    """The line of ``key = ...`` (or of ``[key]``) in the config text."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.split("=")[0].strip() == key or stripped == f"[{key}]":
            return number
    return None


def load_config(path: str | None = None) -> dict[str, Any]:
    """The settings of ``path``, or of ./distgate.toml when it exists, else {}."""
    if path is None:
        candidate = Path(CONFIG_NAME)
        if not candidate.is_file():
            return {}
    else:
        candidate = Path(path)
        if not candidate.is_file():
            raise InputError(f"Config file '{path}' does not exist.")
    try:
        text = candidate.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"Config file '{candidate}' is not UTF-8 text (byte {exc.start}): save it as UTF-8."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"Config file '{candidate}' is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise InputError(
            f"Config file '{candidate}' has the unknown key '{unknown[0]}' "
            f"(known keys: {', '.join(sorted(KNOWN_KEYS))})."
        )
    for key, value in data.items():
        valid, expected = VALIDATORS[key]
        if not valid(value):
            line = _line_of(text, key)
            where = f", line {line}" if line else ""
            raise InputError(
                f"Config file '{candidate}'{where}: {key} must be {expected}, not {value!r}."
            )
    for key in ("attributes", "targets"):
        if isinstance(data.get(key), str):
            data[key] = [data[key]]
    if isinstance(data.get("metric"), list):
        data["metric"] = ",".join(data["metric"])
    if "baseline" in data and not Path(data["baseline"]).is_absolute():
        data["baseline"] = str(candidate.parent / data["baseline"])
    if "view" in data:
        data["view"] = _config_views(data["view"], candidate, text)
    return data


def _config_views(tables: list[dict], candidate: Path, text: str) -> list:
    """The ``[[view]]`` tables as views (:class:`distgate.data.views.View`), a relative
    baseline path taken relative to the file's folder."""
    from distgate.data.views import view_of

    line = _line_of(text, "[view]")
    views = []
    for i, table in enumerate(tables):
        where = f"Config file '{candidate}', [[view]] number {i + 1}"
        if line is not None:
            where += f" (from line {line})"
        view = view_of(table, where)
        baseline = table.get("baseline")
        if baseline is not None:
            if not _is_text(baseline):
                raise InputError(f"{where}: baseline must be a file path in quotes.")
            if not Path(baseline).is_absolute():
                view = replace(view, baseline=str(candidate.parent / baseline))
        views.append(view)
    return views


@dataclass(frozen=True)
class TableOptions:
    """Which table to read and how: the file, which columns make the key, the attribute X
    and the target Y, and how their values are read.

    ``source``: the table's path (or ``-``), or a table in memory (a
    :class:`~distgate.data.frames.FrameSource`); ``attributes``/``targets``: the X and Y
    columns (several make one joint value); ``id_column``: the record key (None: the row
    number); ``bins``: (column, edges) pairs cutting numeric columns into ranges;
    ``baseline``: a baseline file (None: the table's own X distribution)."""

    source: str
    attributes: tuple[str, ...]
    targets: tuple[str, ...]
    id_column: str | None = None
    bins: tuple[tuple[str, tuple[float, ...]], ...] = ()
    baseline: str | None = None
    missing: str = "error"  # what a record with a missing X or Y value does
    engine: str = "auto"  # who counts: auto, arrow, duckdb or dask (distgate.data.engines)
    scheduler: str | None = None  # the Dask scheduler's address (None: a local cluster)
    weight: str | None = None  # column of record counts (a frequency table)
    order: tuple[tuple[str, tuple[str, ...]], ...] = ()  # value order per column
    delimiter: str | None = None  # None: tab for .tsv names, else a comma
    encoding: str | None = None  # None: UTF-8
    # several views of the table (SPEC 4.1; distgate.data.views.View), each with its own
    # columns, bins, baseline and missing values; the first is also the options above.
    # Empty: the one view of the options above
    views: tuple = ()

    @property
    def bins_dict(self) -> dict[str, list[float]]:
        return {column: list(edges) for column, edges in self.bins}

    @property
    def order_dict(self) -> dict[str, list[str]]:
        return {column: list(values) for column, values in self.order}

    @property
    def text_format(self):
        """How the table (and the request log) is written, when it is delimited text."""
        from distgate.data.tables import TextFormat

        return TextFormat(self.delimiter, self.encoding)


def table_options(source: Any, config: dict[str, Any], **given: Any) -> TableOptions:
    """The options to read ``source`` with: each table option ``given`` (by its keyword,
    :data:`distgate.data.spec.TABLE_KEYWORDS`, in the command line's forms; None or left
    out: not given) over the settings file's ``config`` over the default. The columns are
    checked where they are named (:meth:`distgate.data.spec.TableSpec.options`).

    Views (SPEC 4.1): those ``given`` (``--view``), else the settings file's ``[[view]]``
    tables unless -x or -y is given. One view is the options' own columns; several are
    kept in ``views``, each with its bins (the flags' and the file's for its attributes,
    then its own), its missing values and its baseline, the first also as the options'
    own."""
    from distgate.data.values import parse_bins, parse_order

    views = _chosen_views(config, given)
    table_missing = given.get("missing") or config.get("missing") or "error"
    if views:
        first = views[0]
        given = {
            **given,
            "attributes": list(first.attributes),
            "targets": list(first.targets),
            "baseline": first.baseline or given.get("baseline"),
            "missing": first.missing or given.get("missing"),
        }
    attrs = split_names(given.get("attributes")) or list(config.get("attributes") or [])
    targs = split_names(given.get("targets")) or list(config.get("targets") or [])
    # the file's bins and orders serve the columns in use (flags may name other columns);
    # a flag's bins or order for a column that is not in use is still an error
    file_bins = parse_bins(config.get("bins"))
    flag_bins = parse_bins(given.get("bins"))
    used = set(attrs + targs) | {c for v in views for c in (*v.attributes, *v.targets)}
    merged_bins = {c: e for c, e in file_bins.items() if c in attrs}
    merged_bins.update(flag_bins)
    merged_order = {c: v for c, v in parse_order(config.get("order")).items() if c in used}
    merged_order.update(parse_order(given.get("order")))
    fmt = text_format(config, given.get("delimiter"), given.get("encoding"))
    chosen = {
        name: value
        for name, value in (
            ("id_column", given.get("id") or config.get("id")),
            ("baseline", given.get("baseline") or config.get("baseline")),
            ("missing", given.get("missing") or config.get("missing")),
            ("engine", given.get("engine") or config.get("engine")),
            ("weight", given.get("weight") or config.get("weight")),
        )
        if value is not None
    }  # those left out take TableOptions' defaults
    scheduler = given.get("scheduler") or config.get("scheduler")
    if len(views) > 1:
        views = tuple(_view_options(v, file_bins, flag_bins, table_missing) for v in views)
        unused = [c for c in flag_bins if not any(c in v.attributes for v in views)]
        if unused:
            raise InputError(f"Bins are given for '{unused[0]}', which no view's attribute is.")
        merged_bins = dict(views[0].bins)
        chosen["missing"] = views[0].missing
    elif views:
        merged_bins.update(views[0].bins_dict)
    return TableOptions(
        source=source,
        attributes=tuple(attrs),
        targets=tuple(targs),
        bins=tuple((c, tuple(e)) for c, e in merged_bins.items()),
        scheduler=scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS"),
        order=tuple((c, tuple(v)) for c, v in merged_order.items()),
        delimiter=fmt.delimiter,
        encoding=fmt.encoding,
        views=views if len(views) > 1 else (),
        **chosen,
    )


def _view_options(view: Any, file_bins: dict, flag_bins: dict, missing: str) -> Any:
    """A view of several with the bins of its attributes (the file's, then the flags',
    then its own) and its missing values (its own, else the table's)."""
    bins = {c: e for c, e in file_bins.items() if c in view.attributes}
    bins.update({c: e for c, e in flag_bins.items() if c in view.attributes})
    bins.update(view.bins_dict)
    return replace(
        view,
        bins=tuple((c, tuple(e)) for c, e in bins.items()),
        missing=view.missing or missing,
    )


def _chosen_views(config: dict[str, Any], given: dict[str, Any]) -> tuple:
    """The views given (``--view``, the ``views`` keyword), else the settings file's
    unless -x or -y is given; () for the one view of -x and -y."""
    from distgate.data.views import check_views, view_of

    flags = given.get("views")
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


def text_format(config: dict[str, Any], delimiter: str | None, encoding: str | None):
    """How text input is written: --delimiter and --encoding (checked) over the config's."""
    from distgate.data.tables import TextFormat, check_delimiter, check_encoding

    delimiter = delimiter if delimiter is not None else config.get("delimiter")
    encoding = encoding if encoding is not None else config.get("encoding")
    return TextFormat(
        check_delimiter(delimiter) if delimiter is not None else None,
        check_encoding(encoding) if encoding is not None else None,
    )


def split_names(values: list[str] | None) -> list[str]:
    """Accept both ``-x a -x b`` and ``-x a,b``."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def setting(flag: Any, config: dict[str, Any], key: str, default: Any) -> Any:
    """A flag's value when given, else the config's, else ``default``."""
    if flag is not None:
        return flag
    return config.get(key, default)


def joined(items: Sequence[str] | str | None, default: str) -> str:
    """A list option as one comma-separated text: every item given (a repeated option
    adds to the list; keeping only the last would silently drop a metric or a level),
    else ``default``."""
    if not items:
        return default
    return items if isinstance(items, str) else ",".join(items)


def number_list(value: str | Sequence[Any] | float, option: str, kind: type) -> list:
    """The numbers of ``option`` (``kind``: int or float): comma-separated text, numbers,
    or a list of either; InputError quoting them when one is not a number."""
    if isinstance(value, (int, float)):
        value = [value]
    text = value if isinstance(value, str) else ",".join(str(v) for v in value)
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        whole = "whole " if kind is int else ""
        raise InputError(
            f"{option} must be {whole}numbers separated by commas, not '{text}'."
        ) from None


def alpha_list(value: str | Sequence[Any] | float | None, default: str | Sequence[float]):
    """The significance levels given (``default`` when none), each one checked."""
    from distgate.stats.critical import check_alpha

    levels = number_list(default if value is None or value == [] else value, "--alpha", float)
    return [check_alpha(level) for level in levels]


def metric_setting(flag: Sequence[str] | str | None, config: dict[str, Any]) -> str:
    """The chosen metrics: every one given, else the settings file's, else kld."""
    return joined(flag or config.get("metric"), DEFAULT_METRIC)


def gate_choices(
    config: dict[str, Any],
    *,
    metric: Sequence[str] | str | None,
    alpha: float | None,
    critical: str | None,
    seed: int | None,
) -> dict[str, Any]:
    """The online gate's metrics, alpha, critical values and seed (keywords of
    :class:`~distgate.gate.settings.GateSettings`): each given one over the settings
    file's over the default."""
    return {
        "metrics": metric_setting(metric, config).split(","),
        "alpha": setting(alpha, config, "alpha", DEFAULT_ALPHA),
        "critical": setting(critical, config, "critical", DEFAULT_CRITICAL),
        "seed": setting(seed, config, "seed", DEFAULT_SEED),
    }
