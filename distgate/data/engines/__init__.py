"""Counting engines: who turns a table into the count table C[y, x] (and, for replay and
simulate, each record's codes).

* ``arrow``: the in-memory reader of :mod:`distgate.data.domain` (files that fit in memory);
* ``duckdb``: embedded DuckDB, out of core: CSV (also compressed), Parquet, folders, globs;
* ``dask``: a ``dask.distributed`` cluster (``--scheduler ADDRESS`` or
  ``DASK_SCHEDULER_ADDRESS``; a local cluster otherwise) reading partitions anywhere fsspec
  reaches, sending back only grouped counts (and the codes replay and simulate need);
* ``auto``: arrow for one plain file that fits comfortably in memory, duckdb otherwise.

Every engine applies the same binning, missing-value and label-order rules, so the counts,
and everything computed from them, are the same whichever counted them.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.errors import InputError

ENGINES = ("auto", "arrow", "duckdb", "dask")
# arrow's reading peaks near this many times the CSV's size (measured: 10M records,
# 505 MiB peak for a 190 MB file); auto keeps it below half of the memory available
ARROW_PEAK_FACTOR = 3
COMPRESSION_RATIO = 8  # assumed for a compressed CSV whose plain size is not known


def check_engine(name: str) -> str:
    if name not in ENGINES:
        raise InputError(f"Unknown --engine '{name}' (choose from {', '.join(ENGINES)}).")
    return name


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable), or the physical memory."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def choose_engine(source: str, engine: str) -> tuple[str, str]:
    """(engine, why): ``auto`` resolved by what ``source`` is and how large."""
    from distgate.data.compression import MAGIC
    from distgate.data.engines.sources import is_remote
    from distgate.data.frames import FrameSource

    check_engine(engine)
    if isinstance(source, FrameSource):
        if engine not in ("auto", "arrow"):
            raise InputError(
                f"The {engine} engine reads files; a table in memory {source} is counted "
                "by the arrow engine."
            )
        return "arrow", "a table in memory"
    if engine != "auto":
        return engine, "as asked"
    if is_remote(source):
        return "dask", "a URL only the Dask workers read"
    if source == "-" or not os.path.exists(source):
        if not set("*?[") & set(source):
            return "arrow", "a stream"  # or no such file: the arrow path words the error
        return "duckdb", "several files"
    if os.path.isfile(source):
        files = [source]
    elif os.path.isdir(source):
        files = [os.path.join(source, name) for name in os.listdir(source)]
    else:
        return "arrow", "a stream"  # a named pipe: read once, by the arrow path
    size = 0
    for path in files:
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as handle:
            head = handle.read(8)
        packed = head.startswith(b"PAR1") or any(head.startswith(m) for m, _ in MAGIC)
        size += os.path.getsize(path) * (COMPRESSION_RATIO if packed else 1)
    if size * ARROW_PEAK_FACTOR <= available_memory() // 2:
        return "arrow", "fits in memory"
    return "duckdb", "larger than memory comfortably holds"


@dataclass(frozen=True)
class EngineSettings:
    """Which engine counts, and for dask, which scheduler (None: a local cluster)."""

    name: str = "auto"
    scheduler: str | None = None


def open_reader(source: str, settings: EngineSettings, engine: str, fmt=None):
    """The reader of the duckdb or dask engine for ``source`` (``fmt``: a TextFormat)."""
    if engine == "duckdb":
        from distgate.data.engines.sources import is_remote

        if is_remote(source):
            raise InputError(
                f"The duckdb engine reads local files; read '{source}' with --engine dask."
            )
        from distgate.data.engines.duckdb import DuckDBReader

        return DuckDBReader(source, fmt)
    from distgate.extras import require

    for package in ("distributed", "dask.dataframe", "fsspec", "duckdb"):
        require(package, "The dask engine", "cluster")
    from distgate.data.engines.dask import DaskReader

    return DaskReader(source, settings.scheduler, fmt)


_OPEN: list[weakref.finalize] = []  # readers still open (temporary folders, clusters)


def close_all() -> None:
    """Close every reader still open: the CLI leaves with os._exit, which runs no
    finalizer, so a command closes them (and a local cluster's processes) itself."""
    while _OPEN:
        _OPEN.pop()()


class EngineTable:
    """A table counted by the duckdb or dask engine, with what the commands read of an
    :class:`~distgate.data.domain.EncodedTable`: the labels, the size, the records left out,
    the per-record codes (computed on first use) and the mapping of request keys."""

    def __init__(self, reader, encoding, engine: str) -> None:
        self._reader, self._encoding, self.engine = reader, encoding, engine
        plan = encoding.plan
        self.target_labels = encoding.target_labels
        self.value_labels = encoding.value_labels
        self.size, self.dropped = encoding.size, encoding.dropped
        self.counts = encoding.counts
        self.attributes, self.targets = plan.attributes, plan.targets
        self.source = plan.source.given
        self.keys = None  # keys are matched by the engine (map_requests), never loaded
        self._codes: tuple[np.ndarray, np.ndarray] | None = None
        self._closer = weakref.finalize(self, reader.close)
        _OPEN.append(self._closer)

    @property
    def client(self):
        """The dask.distributed client of the dask engine (None for duckdb)."""
        return getattr(self._reader, "client", None)

    def close(self) -> None:
        self._closer()

    def _all_codes(self) -> tuple[np.ndarray, np.ndarray]:
        if self._codes is None:
            self._codes = self._reader.codes(self._encoding)
        return self._codes

    @property
    def target_codes(self) -> np.ndarray:
        return self._all_codes()[0]

    @property
    def value_codes(self) -> np.ndarray:
        return self._all_codes()[1]

    def map_requests(self, source: str, key_column: str, fmt, *, skip_unknown: bool = False):
        """The request log ``source`` mapped to the records (a
        :class:`~distgate.data.requests.RequestLog`, -1 for an unknown key): the log's distinct
        keys are joined against the table's key column as it streams past, so the log's
        key column is read whole; a table keyed by row number needs no join, and the log is
        then read a batch at a time."""
        from distgate.data.requests import (
            RequestLog,
            read_request_keys,
            read_requests,
            require_known,
            unknown_of,
        )

        plan = self._encoding.plan
        name = plan.source.name
        if plan.key is None:
            return read_requests(
                source,
                key_column,
                fmt,
                table_keys=None,
                table_size=self.size,
                table_name=name,
                skip_unknown=skip_unknown,
                table_source=self.source,
            )
        keys = read_request_keys(source, key_column, fmt).cast(pa.string())
        records = self.positions_of(keys)
        require_known(source, *unknown_of(keys, records), name, skip_unknown)
        return RequestLog(str(source), records, keys, fmt)

    def record_keys(self) -> pa.Array | None:
        """Every record's key (text) in the table's order, read by the engine (a gate that
        serves keys as they come holds them: ``distgate serve``); None for a table keyed
        by row number."""
        if self._encoding.plan.key is None:
            return None
        return self._reader.keys(self._encoding)

    def positions_of(self, keys: pa.Array) -> np.ndarray | None:
        """The position of the record of each key (text) in ``keys``, -1 where no record
        has it, found by the engine as the table streams past; None for a table keyed by
        row number."""
        if self._encoding.plan.key is None:
            return None
        distinct = pc.unique(keys)
        positions, codes = self._reader.positions(self._encoding, distinct)
        if self._codes is None:  # the same pass gave every record's codes: no second one
            self._codes = codes
        return positions[pc.index_in(keys, value_set=distinct).to_numpy()]


def load_table(
    source: str,
    plan_options: dict,
    settings: EngineSettings,
    engine: str,
    *,
    need_keys: bool = False,
    fmt=None,
) -> EngineTable:
    """Count ``source`` with ``engine`` (duckdb or dask); ``plan_options`` are the
    :class:`~distgate.data.engines.plan.Plan` fields other than the source; ``fmt`` is the
    text format (delimiter) of a delimited file."""
    from distgate.data.engines.plan import Plan, decode

    reader = open_reader(source, settings, engine, fmt)
    try:
        plan = Plan(reader.source, numeric=reader.numeric_columns(), **plan_options)
        grouped = reader.grouped(plan)
        if grouped.num_rows == 0:
            raise InputError(f"The {plan.source.name} has a header but no records.")
        encoding = decode(plan, grouped, reader.find)
        if need_keys and plan.key:
            _check_keys(reader, plan)
    except BaseException:
        reader.close()
        raise
    return EngineTable(reader, encoding, engine)


def _check_keys(reader, plan) -> None:
    """Every record has a key and no key is there twice (as the arrow path requires)."""
    from distgate.data.engines.plan import quote

    key = f"CAST({quote(plan.key)} AS VARCHAR)"
    blank = reader.find(f"regexp_full_match(coalesce({key}, ''), '\\s*')", 1, None)
    if blank:
        where = f", {blank[0][0]}" if blank[0][0] else ""
        raise InputError(f"The {plan.source.name}{where}: column '{plan.key}' has no value.")
    twice = reader.duplicate_key(plan)
    if twice is not None:
        text = "'" + twice.replace("'", "''") + "'"
        lines = [w for w, _ in reader.find(f"{key} = {text}", 2, None)]
        where = f" ({' and '.join(lines)})" if lines else ""
        raise InputError(
            f"The {plan.source.name} has the key '{twice}' twice in column '{plan.key}'{where}."
        )
