"""The ``dask`` engine: a ``dask.distributed`` cluster counts the partitions.

Each worker reads its partitions (byte blocks of CSV files, Parquet files; local paths the
workers can read or any fsspec URL) and runs the same GROUP BY as the duckdb engine on them
with an embedded DuckDB; only the grouped rows (a few per cell) travel back and are summed
here. Replay and simulate also get each record's codes, partition by partition in order,
and replay's request keys are matched on the workers (only the positions come back).
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.engines.plan import SUMS, Plan
from distgate.data.engines.sources import is_remote, resolve_local, resolve_remote, spool_folder
from distgate.data.tables import display_name
from distgate.errors import InputError

CONNECT_TIMEOUT = "5s"
CSV_BLOCK = "64MB"  # bytes of a plain CSV file per partition


def connect(scheduler: str | None):
    """(client, cluster): the scheduler at ``scheduler``, or a local cluster of one worker
    process per core (closed with the client)."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT), None
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            detail = str(exc).split("\n")[0].rstrip(".") or type(exc).__name__
            raise InputError(
                f"Cannot reach the Dask scheduler at '{scheduler}' ({detail}): start one with "
                "'dask scheduler' (and workers with 'dask worker ADDRESS'), or leave out "
                "--scheduler to use a local cluster."
            ) from None
    cluster = LocalCluster(
        n_workers=os.cpu_count() or 1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        silence_logs=logging.CRITICAL,
    )
    return Client(cluster), cluster


class DaskReader:
    """One table read by the workers of one cluster (closed with :meth:`close`)."""

    name = "dask"

    def __init__(self, given: str, scheduler: str | None, fmt=None) -> None:
        self._spool = spool_folder()
        try:
            if is_remote(given):
                self.source = resolve_remote(given, fmt)
            else:
                self.source = resolve_local(given, self._spool.name, fmt)
            self.client, self._cluster = connect(scheduler)
        except BaseException:
            self._spool.cleanup()
            raise

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._spool.cleanup()

    def numeric_columns(self) -> frozenset[str]:
        if is_remote(self.source.given):
            return frozenset()  # read as text by the workers' DuckDB, then cast
        from distgate.data.engines.duckdb import numeric_columns

        return numeric_columns(self.source)

    def _partitions(self, columns: list[str] | None) -> list:
        """The table's partitions in its order: a Parquet file's path (its worker's DuckDB
        reads it), or a delayed pandas DataFrame of a block of CSV text."""
        if self.source.kind == "parquet":
            return [("parquet", f) for f in self.source.files]
        import dask.dataframe as dd

        compression = self.source.compression
        frame = dd.read_csv(
            list(self.source.files),
            usecols=columns,
            sep=self.source.delimiter,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            compression=None if compression == "none" else compression,
            blocksize=CSV_BLOCK if compression == "none" else None,
        )
        return frame.to_delayed()

    def _compute(self, tasks) -> list:
        try:
            return self.client.gather(self.client.compute(tasks))
        except InputError:
            raise
        except Exception as exc:  # a worker's error: a malformed file, a lost worker
            detail = str(exc).strip().split("\n")[0]
            raise InputError(f"The {self.source.name} cannot be read: {detail}.") from None

    def _check(self, wanted: list[str]) -> None:
        if not is_remote(self.source.given):
            from distgate.data.engines.duckdb import check_columns

            check_columns(self.source, wanted)

    def grouped(self, plan: Plan) -> pa.Table:
        from dask import delayed

        self._check(plan.read)
        columns = [c for c in plan.read if c != plan.key]
        parts = self._compute([delayed(_grouped_part)(p, plan) for p in self._partitions(columns)])
        listed = ", ".join(plan.group_names())
        return _sql(
            pa.concat_tables(parts),
            lambda t: f"SELECT {listed}, {SUMS} FROM {t} GROUP BY ALL",
        )

    def find(self, condition: str, limit: int, column: str | None):
        """Records matching ``condition`` (and their ``column``), the first of each
        partition: the workers know the file of a Parquet partition, not the line of a
        block of CSV text, so that place is left empty."""
        from dask import delayed

        parts = self._partitions(self._condition_columns(condition, column))
        hits = self._compute([delayed(_first_match)(p, condition, column) for p in parts])
        return [
            (f"file {display_name(part[1])}" if isinstance(part, tuple) else "", hit[0])
            for part, hit in zip(parts, hits, strict=True)
            if hit is not None
        ][:limit]

    def _condition_columns(self, condition: str, column: str | None) -> list[str] | None:
        """The columns a condition names (they are quoted in it)."""
        from distgate.data.engines.duckdb import columns_of
        from distgate.data.engines.plan import quote

        names = columns_of(self.source) if not is_remote(self.source.given) else []
        used = [c for c in names if quote(c) in condition or c == column]
        return used or names or None  # None: every column (a URL's header is not read here)

    def duplicate_key(self, plan: Plan) -> str | None:
        """A key held by two records: every worker sends the keys of its partitions as
        hash buckets, and the buckets are checked one by one, each on a worker."""
        from dask import delayed

        buckets = 16
        parts = self._partitions([plan.key])
        split = [delayed(_key_buckets, nout=buckets)(p, plan.key, buckets) for p in parts]
        checks = [delayed(_repeated)([s[b] for s in split]) for b in range(buckets)]
        found = [k for k in self._compute(checks) if k is not None]
        return found[0] if found else None

    def codes(self, encoding) -> tuple[np.ndarray, np.ndarray]:
        from dask import delayed

        plan = encoding.plan
        parts = self._partitions(plan.read)
        results = self._compute([delayed(_codes_part)(p, encoding) for p in parts])
        targets = [t for t, _ in results]
        values = [v for _, v in results]
        empty = np.zeros(0, dtype=np.int32)
        return (
            np.concatenate(targets) if targets else empty,
            np.concatenate(values) if values else empty,
        )

    def keys(self, encoding) -> pa.Array:
        """Every counted record's key (text), in the table's order, from the workers."""
        from dask import delayed

        parts = self._partitions(encoding.plan.read)
        keys = self._compute([delayed(_keys_part)(p, encoding) for p in parts])
        return pa.chunked_array(keys, pa.string()).combine_chunks()

    def positions(self, encoding, keys: pa.Array) -> np.ndarray:
        """Each of the distinct ``keys``' position among the counted records (-1 if none):
        every worker matches the keys against its partitions' key column, and sends the
        records' codes of the same pass."""
        from dask import delayed

        plan = encoding.plan
        parts = self._partitions(plan.read)
        shared = self.client.scatter(keys, broadcast=True)
        results = self._compute([delayed(_positions_part)(p, encoding, shared) for p in parts])
        found = np.full(len(keys), -1, dtype=np.int64)
        base = 0
        for kept, which, rows, _ in results:
            found[which] = base + rows
            base += kept
        codes = [r[3] for r in results]
        empty = np.zeros(0, dtype=np.int32)
        targets = np.concatenate([t for t, _ in codes]) if codes else empty
        values = np.concatenate([v for _, v in codes]) if codes else empty
        return found, (targets, values)


def _sql(part, sql_of):
    """``sql_of(relation)`` over one partition, on one thread (so in the partition's order)."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        if isinstance(part, tuple):  # ("parquet", path or URL)
            path = part[1]
            if is_remote(path):
                import fsspec

                con.register_filesystem(fsspec.filesystem(path.split("://")[0]))
            relation = f"read_parquet('{path.replace(chr(39), chr(39) * 2)}')"
        else:
            con.register("part", part)
            relation = "part"
        result = con.sql(sql_of(relation))
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        return fetch()
    finally:
        con.close()


def _grouped_part(frame, plan: Plan) -> pa.Table:
    return _sql(frame, plan.grouped_sql)


def _key_buckets(part, key: str, buckets: int) -> list[pa.Array]:
    """A partition's keys split by hash into ``buckets`` lists."""
    from distgate.data.engines.plan import quote

    text = f"CAST({quote(key)} AS VARCHAR)"
    rows = _sql(part, lambda t: f"SELECT {text} AS k, hash({text}) % {buckets} AS b FROM {t}")
    keys, bucket = rows.column("k"), rows.column("b")
    return [keys.filter(pc.equal(bucket, b)) for b in range(buckets)]


def _repeated(parts: list[pa.ChunkedArray]) -> str | None:
    """A key found twice among the keys of one bucket, or None."""
    chunks = [chunk for part in parts for chunk in part.chunks]
    counts = pc.value_counts(pa.chunked_array(chunks, type=pa.string()))
    twice = pc.filter(counts, pc.greater(counts.field("counts"), 1))
    return twice[0]["values"].as_py() if len(twice) else None


def _first_match(frame, condition: str, column: str | None):
    from distgate.data.engines.plan import quote

    value = f"CAST({quote(column)} AS VARCHAR)" if column else "NULL"
    rows = _sql(frame, lambda t: f"SELECT {value} AS v FROM {t} WHERE {condition} LIMIT 1")
    return rows.column(0).to_pylist() if rows.num_rows else None


def _codes_part(frame, encoding) -> tuple[np.ndarray, np.ndarray]:
    batch = _sql(frame, encoding.plan.codes_sql)
    _, targets, values = encoding.record_codes(batch)
    return targets, values


def _keys_part(frame, encoding) -> pa.Array:
    """The keys of the records counted in this partition."""
    batch = _sql(frame, encoding.plan.codes_sql)
    kept, _, _ = encoding.record_codes(batch)
    keys = batch.column(batch.num_columns - 1).filter(pa.array(kept))
    return keys.cast(pa.string()).combine_chunks()


def _positions_part(frame, encoding, keys: pa.Array):
    """(records counted in this partition, which keys it holds, their local positions,
    the records' codes)."""
    batch = _sql(frame, encoding.plan.codes_sql)
    kept, targets, values = encoding.record_codes(batch)
    table_keys = batch.column(batch.num_columns - 1).filter(pa.array(kept))
    index = pc.index_in(table_keys, value_set=keys)
    rows = np.flatnonzero(~index.is_null().to_numpy(zero_copy_only=False))
    return len(table_keys), index.drop_null().to_numpy(), rows, (targets, values)


def run_configs(client, job, configs, progress, sequences: int):
    """simulate's (index, result) per configuration, every (configuration, sequence) a
    task on the workers; the job (codes, orders) is sent to each worker once. A sequence's
    run does not depend on where it runs, so the results equal a local run's."""
    from distgate.observer.stream import StreamPoints

    shared = client.scatter(job, broadcast=True)
    for k, config in enumerate(configs):
        futures = [
            client.submit(_one_sequence, shared, config, s, pure=False) for s in range(sequences)
        ]
        results = client.gather(futures)
        counts = np.concatenate([c for c, _, _ in results])
        points = [p for _, _, p in results if p is not None]
        if progress is not None:
            for _ in range(sequences):
                progress()
        yield k, (counts, results[0][1], StreamPoints.concatenate(points) if points else None)


def _one_sequence(job, config, s: int):
    import dataclasses

    one = dataclasses.replace(
        job, orders=[job.orders[s]], keep_evolution=job.keep_evolution and s == 0
    )
    return one.run(config)
