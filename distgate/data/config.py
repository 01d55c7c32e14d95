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

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from distgate.defaults import DEFAULT_METRIC
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
