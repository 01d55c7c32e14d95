"""Where an out-of-core engine reads a table from: one CSV file (plain or compressed),
one Parquet file, a folder of such files, a glob, or (Dask) any fsspec URL.

Files are listed in sorted order so that every engine sees the records in the same order
(record positions, and so replay's decisions, do not depend on the engine).
"""

from __future__ import annotations

import bz2
import glob
import lzma
import os
import shutil
import tempfile
from dataclasses import dataclass

from distgate.data.compression import MAGIC
from distgate.data.tables import display_name
from distgate.errors import InputError

TABLE_SUFFIXES = (".csv", ".parquet", ".pq", ".gz", ".zst", ".bz2", ".xz", ".tsv", ".txt")
_GLOB_CHARACTERS = set("*?[")


@dataclass(frozen=True)
class Source:
    """The files of one table, all of one ``kind`` (``csv`` or ``parquet``);
    ``compression`` is DuckDB's name for the CSV files' compression (or "none")."""

    given: str
    files: tuple[str, ...]
    kind: str
    compression: str = "none"
    delimiter: str = ","

    @property
    def name(self) -> str:
        return f"table {display_name(self.given)}"

    @property
    def single_csv(self) -> bool:
        """Line numbers in messages are a CSV file's own only when there is one file."""
        return self.kind == "csv" and len(self.files) == 1


def is_remote(path: str) -> bool:
    return "://" in path


def _kind(path: str) -> tuple[str, str | None]:
    """('parquet' | 'csv', compression from the first bytes)."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(b"PAR1"):
        return "parquet", None
    return "csv", next((name for magic, name in MAGIC if head.startswith(magic)), None)


def _list_files(given: str) -> list[str]:
    if os.path.isdir(given):
        files = sorted(
            os.path.join(given, name)
            for name in os.listdir(given)
            if not name.startswith((".", "_")) and name.lower().endswith(TABLE_SUFFIXES)
        )
        if not files:
            raise InputError(f"Folder {display_name(given)} holds no CSV or Parquet file.")
        return files
    if _GLOB_CHARACTERS & set(given):
        files = sorted(p for p in glob.glob(given) if os.path.isfile(p))
        if not files:
            raise InputError(f"No file matches {display_name(given)}.")
        return files
    if not os.path.exists(given):
        raise InputError(f"File {display_name(given)} does not exist.")
    return [given]


def check_format(given: str, fmt) -> None:
    """What the out-of-core engines do not read, in one sentence each."""
    from distgate.data.tables import EXCEL_SUFFIXES, UTF8_NAMES

    if fmt.encoding is not None and fmt.encoding.lower() not in UTF8_NAMES:
        raise InputError(
            f"--encoding {fmt.encoding} is read by the arrow engine only: convert the table "
            "to UTF-8 (e.g. with iconv) for the duckdb and dask engines, or use --engine arrow."
        )
    if given.lower().endswith(EXCEL_SUFFIXES):
        raise InputError(
            f"The duckdb and dask engines read CSV, TSV and Parquet; the Excel workbook "
            f"{display_name(given)} is read by --engine arrow (or save it as CSV)."
        )


def resolve_local(given: str, spool_dir: str, fmt=None) -> Source:
    """The files behind ``given``. Standard input and pipes are copied to ``spool_dir``
    (they can be read once), bz2/xz files decompressed there (DuckDB reads gzip and zstd
    itself). ``fmt`` (a TextFormat) gives the delimiter."""
    from distgate.data.tables import PLAIN, delimiter_of

    fmt = fmt or PLAIN
    check_format(given, fmt)
    if given == "-" or (
        os.path.exists(given) and not os.path.isdir(given) and not os.path.isfile(given)
    ):
        copy = os.path.join(spool_dir, "stdin.csv")
        with open(copy, "wb") as out:
            if given == "-":
                import sys

                shutil.copyfileobj(sys.stdin.buffer, out)
            else:
                with open(given, "rb") as stream:
                    shutil.copyfileobj(stream, out)
        files = [copy]
    else:
        files = _list_files(given)
    kinds = []
    for path in files:
        if os.path.getsize(path) == 0:
            raise InputError(f"File {display_name(path)} is empty.")
        kinds.append(_kind(path))
    if len({k for k, _ in kinds}) > 1:
        raise InputError(f"The {display_name(given)} mixes CSV and Parquet files: keep one kind.")
    kind = kinds[0][0]
    compressions = {c for _, c in kinds}
    if len(compressions) > 1:
        raise InputError(
            f"The files of {display_name(given)} are compressed in different ways: keep one."
        )
    compression = compressions.pop() or "none"
    if compression in ("bz2", "xz"):
        files = [_decompress(path, compression, spool_dir, i) for i, path in enumerate(files)]
        compression = "none"
    # absolute: Dask workers started in another folder read the same files
    absolute = tuple(os.path.abspath(f) for f in files)
    return Source(given, absolute, kind, compression, delimiter_of(files[0], fmt))


def _decompress(path: str, kind: str, spool_dir: str, number: int) -> str:
    """A bz2 or xz file decompressed to the spool folder, block by block."""
    target = os.path.join(spool_dir, f"part{number}.csv")
    opener = bz2.open if kind == "bz2" else lzma.open
    try:
        with opener(path, "rb") as stream, open(target, "wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise InputError(
            f"File {display_name(path)} looks {kind}-compressed but cannot be decompressed: {exc}."
        ) from None
    return target


def resolve_remote(given: str, fmt=None) -> Source:
    """An fsspec URL (s3://, gcs://, https://, memory://...) or a glob of them, read by the
    Dask workers; the kind is told by the file names."""
    import fsspec

    from distgate.data.tables import PLAIN, delimiter_of

    fmt = fmt or PLAIN
    check_format(given, fmt)

    try:
        fs, _, paths = fsspec.get_fs_token_paths(given)
    except (ImportError, ValueError, OSError) as exc:
        raise InputError(f"The {display_name(given)} cannot be opened: {exc}.") from None
    protocol = fs.protocol[0] if isinstance(fs.protocol, tuple) else fs.protocol
    if len(paths) == 1 and fs.isdir(paths[0]):
        paths = sorted(p for p in fs.ls(paths[0], detail=False) if p.endswith(TABLE_SUFFIXES))
    if not paths:
        raise InputError(f"No file matches {display_name(given)}.")
    urls = tuple(f"{protocol}://{p}" if "://" not in p else p for p in sorted(paths))
    kind = "parquet" if all(u.endswith((".parquet", ".pq")) for u in urls) else "csv"
    return Source(given, urls, kind, "infer", delimiter_of(urls[0], fmt))


def spool_folder() -> tempfile.TemporaryDirectory:
    """A private scratch folder (copies of streams, DuckDB's spill files)."""
    return tempfile.TemporaryDirectory(prefix="distgate-")
