"""The ``duckdb`` engine: counts out of core with embedded DuckDB.

One GROUP BY over the file(s) gives a few rows per (target, value) cell, whatever the
table's size; DuckDB spills to a private temporary folder past its memory limit
(``DISTGATE_DUCKDB_MEMORY``, default 1GB). Per-record codes (replay, simulate) and the
mapping of a request log's keys are streamed in record batches in the table's order.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.engines.plan import Plan, quote, sql_text
from distgate.data.engines.sources import Source, resolve_local, spool_folder
from distgate.data.tables import display_name, read_header
from distgate.errors import InputError

DEFAULT_MEMORY = "1GB"
BATCH_ROWS = 1 << 20


def columns_of(source: Source) -> list[str]:
    if source.kind == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(source.files[0]).names)
    from distgate.data.tables import TextFormat

    return read_header(source.files[0], TextFormat(source.delimiter))


def numeric_columns(source: Source) -> frozenset[str]:
    """The columns a Parquet source stores as numbers (a CSV file's are all text)."""
    if source.kind != "parquet":
        return frozenset()
    import pyarrow.parquet as pq

    schema = pq.read_schema(source.files[0])
    return frozenset(
        f.name
        for f in schema
        if pa.types.is_integer(f.type)
        or pa.types.is_floating(f.type)
        or pa.types.is_decimal(f.type)
    )


def check_columns(source: Source, wanted: list[str]) -> None:
    """The arrow path's sentence for a column the table does not have."""
    header = columns_of(source)
    if len(set(header)) != len(header):
        twice = next(c for c in header if header.count(c) > 1)
        raise InputError(f"The {source.name} has the column '{twice}' twice in its header.")
    missing = [c for c in wanted if c not in header]
    if missing:
        raise InputError(
            f"The {source.name} has no column '{missing[0]}' (its columns are: "
            f"{', '.join(header)})."
        )


def relation(source: Source, *, filename: bool = False) -> str:
    """DuckDB's table function reading ``source`` (every column as text for CSV)."""
    files = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in source.files) + "]"
    extra = ", filename = true" if filename else ""
    if source.kind == "parquet":
        return f"read_parquet({files}{extra})"
    return (
        f"read_csv({files}, header = true, delim = {sql_text(source.delimiter)}, "
        "quote = '\"', escape = '\"', "
        f"all_varchar = true, compression = '{source.compression}'{extra})"
    )


class DuckDBReader:
    """One table read through one DuckDB connection (closed with :meth:`close`)."""

    name = "duckdb"

    def __init__(self, given: str, fmt=None, memory_limit: str | None = None) -> None:
        from distgate.extras import require

        duckdb = require("duckdb", "The duckdb engine", "engines")

        self._spool = spool_folder()
        self.source = resolve_local(given, self._spool.name, fmt)
        config = {
            "memory_limit": memory_limit
            or os.environ.get("DISTGATE_DUCKDB_MEMORY", DEFAULT_MEMORY),
            "temp_directory": os.path.join(self._spool.name, "spill"),
            "preserve_insertion_order": True,
        }
        self._con = duckdb.connect(config=config)

    def close(self) -> None:
        self._con.close()
        self._spool.cleanup()

    @contextlib.contextmanager
    def _errors(self):
        """A DuckDB error (a malformed file) as one sentence naming the table."""
        import duckdb

        try:
            yield
        except duckdb.Error as exc:
            detail = str(exc).strip().split("\n")[0]
            raise InputError(f"The {self.source.name} cannot be read: {detail}.") from None

    def _table(self, sql: str) -> pa.Table:
        with self._errors():
            relation = self._con.sql(sql)
            # DuckDB 2 renamed fetch_arrow_table / fetch_record_batch to to_arrow_*
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            return fetch()

    def numeric_columns(self) -> frozenset[str]:
        return numeric_columns(self.source)

    def grouped(self, plan: Plan) -> pa.Table:
        check_columns(self.source, plan.read)
        return self._table(plan.grouped_sql(relation(self.source)))

    def _ordered(self, columns: list[str], sql_of) -> Iterator[tuple[str, pa.Table]]:
        """(file, rows) of ``sql_of(relation)`` over the table in its order: DuckDB's own
        parallel scan does not keep the order of records across Parquet files, so the
        files are streamed here one batch at a time and each batch is queried alone."""
        import duckdb

        con = duckdb.connect(config={"threads": 1})
        try:
            for file in self.source.files:
                for batch in self._file_batches(file, columns):
                    with self._errors():
                        con.register("part", batch)
                        relation = con.sql(sql_of("part"))
                        fetch = getattr(relation, "to_arrow_table", None)
                        yield file, (fetch or relation.fetch_arrow_table)()
                        con.unregister("part")
        finally:
            con.close()

    def _file_batches(self, path: str, columns: list[str]) -> Iterator[pa.RecordBatch]:
        if self.source.kind == "parquet":
            import pyarrow.parquet as pq

            yield from pq.ParquetFile(path).iter_batches(BATCH_ROWS, columns=columns)
            return
        import pyarrow.csv as pacsv

        compression = None if self.source.compression == "none" else self.source.compression
        convert = pacsv.ConvertOptions(
            include_columns=columns, column_types=dict.fromkeys(columns, pa.string())
        )
        parse = pacsv.ParseOptions(delimiter=self.source.delimiter, newlines_in_values=True)
        try:
            with pa.input_stream(path, compression=compression) as stream:
                yield from pacsv.open_csv(
                    stream,
                    read_options=pacsv.ReadOptions(block_size=1 << 24),
                    parse_options=parse,
                    convert_options=convert,
                )
        except pa.ArrowInvalid as exc:
            detail = str(exc).split("\n")[0]
            raise InputError(f"The {self.source.name} cannot be read: {detail}.") from None

    def batches(self, plan: Plan) -> Iterator[pa.Table]:
        """``plan.codes_sql`` rows in the table's order."""
        for _, rows in self._ordered(plan.read, plan.codes_sql):
            yield rows

    def find(self, condition: str, limit: int, column: str | None):
        """Where the first ``limit`` records matching ``condition`` are (a full scan, only
        on the way to an error message), with the raw text of ``column``."""
        value = f"CAST({quote(column)} AS VARCHAR)" if column else "NULL"
        columns = [c for c in columns_of(self.source) if quote(c) in condition or c == column]
        found: list[tuple[str, str | None]] = []
        rows: dict[str, int] = {}  # records of each file before this batch
        sql_of = lambda part: f"SELECT coalesce(({condition}), false), {value} FROM {part}"  # noqa: E731
        for file, batch in self._ordered(columns, sql_of):
            hit = np.flatnonzero(batch.column(0).to_numpy(zero_copy_only=False))
            for i in hit[: limit - len(found)]:
                found.append(
                    (self._where(file, rows.get(file, 0) + int(i)), batch.column(1)[int(i)].as_py())
                )
            if len(found) == limit:
                break
            rows[file] = rows.get(file, 0) + batch.num_rows
        return found

    def _where(self, file: str, row: int) -> str:
        if self.source.kind == "csv":
            line = f"line {row + 2}"
            return line if len(self.source.files) == 1 else f"file {display_name(file)}, {line}"
        return f"file {display_name(file)}, row {row + 1}"

    def duplicate_key(self, plan: Plan) -> str | None:
        sql = (
            f"SELECT k FROM ({plan.codes_sql(relation(self.source))}) "
            "GROUP BY k HAVING count(*) > 1 LIMIT 1"
        )
        rows = self._table(sql).column(0).to_pylist()
        return rows[0] if rows else None

    def codes(self, encoding) -> tuple[np.ndarray, np.ndarray]:
        """Every counted record's (target code, value code), in the table's order."""
        targets, values = [], []
        for batch in self.batches(encoding.plan):
            _, t, v = encoding.record_codes(batch)
            targets.append(t)
            values.append(v)
        return _joined(targets), _joined(values)

    def keys(self, encoding) -> pa.Array:
        """Every counted record's key (text), in the table's order."""
        parts = []
        for batch in self.batches(encoding.plan):
            kept, _, _ = encoding.record_codes(batch)
            key = batch.column(batch.num_columns - 1).filter(pa.array(kept))
            parts.extend(key.cast(pa.string()).chunks)
        return pa.chunked_array(parts, pa.string()).combine_chunks()

    def positions(self, encoding, keys: pa.Array):
        """Position among the counted records of each of the distinct ``keys`` (-1 where
        the table has none): a hash join of the keys against the streamed key column;
        and, from the same pass, every record's codes (as :meth:`codes`)."""
        found = np.full(len(keys), -1, dtype=np.int64)
        base = 0
        targets, values = [], []
        for batch in self.batches(encoding.plan):
            kept, t, v = encoding.record_codes(batch)
            base = _match(batch.column(batch.num_columns - 1), kept, keys, found, base)
            targets.append(t)
            values.append(v)
        return found, (_joined(targets), _joined(values))


def _match(column: pa.Array, kept: np.ndarray, keys: pa.Array, found: np.ndarray, base: int):
    """Write the positions of ``keys`` found in this batch's kept records; the next base."""
    table_keys = column.filter(pa.array(kept))
    index = pc.index_in(table_keys, value_set=keys)
    hit = ~index.is_null().to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(hit)
    found[index.drop_null().to_numpy()] = base + rows
    return base + len(table_keys)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
