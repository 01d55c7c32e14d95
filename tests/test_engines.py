"""The counting engines agree: arrow, duckdb and dask give the same counts, labels,
assessments and replay decisions on the same records, whether they come as one CSV file,
a compressed one or a folder of Parquet files; every --missing mode included.

Dask runs on the session's local cluster of two worker processes (tests/conftest.py), shared
with the other tests that use one (grouped on one pytest-xdist worker)."""

import gzip
import json
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distgate.data.config import TableOptions
from distgate.data.inputs import load_inputs
from distgate.errors import InputError
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

pytestmark = pytest.mark.xdist_group("dask")

BINS = (("age", (18.0, 30.0, 45.5)),)


def _rows(count: int = 600, seed: int = 3):
    """Records with a text attribute (numbers as text, spaces kept), a binned number, two
    text targets, and gaps: empty fields, blanks, NA and NaN in the number."""
    rng = np.random.default_rng(seed)
    cities = ["Oslo", " Bergen", "Tromsø", "10", "9", "x,y"]
    rows = []
    for i in range(count):
        age = str(int(rng.integers(10, 70)))
        city = cities[int(rng.integers(len(cities)))]
        unit = ["A", "B", "C"][int(rng.integers(3))]
        grade = str(int(rng.integers(1, 4)))
        if i % 50 == 7:
            age = ["", "NA", "NaN"][i % 3]
        if i % 71 == 5:
            city = ["", "  "][i % 2]
        if i % 97 == 11:
            unit = ""
        rows.append({"id": f"r{i:04d}", "city": city, "age": age, "unit": unit, "grade": grade})
    return rows


def _csv_text(rows) -> str:
    import csv
    import io

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The same records as a CSV file, a gzip file without a telling name, and a folder
    of three Parquet files with typed columns (age as numbers with nulls)."""
    folder = tmp_path_factory.mktemp("engines")
    rows = _rows()
    plain = folder / "records.csv"
    plain.write_text(_csv_text(rows))
    packed = folder / "records.data"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    parts = folder / "parts"
    parts.mkdir()
    for k, start in enumerate(range(0, len(rows), 250)):
        chunk = rows[start : start + 250]
        ages = []
        for r in chunk:
            text = r["age"].strip()
            ages.append(float(text) if text not in ("", "NA", "NaN") else None)
        table = pa.table(
            {
                "id": [r["id"] for r in chunk],
                "city": [r["city"] if r["city"] else None for r in chunk],
                "age": pa.array(ages, type=pa.float64()),
                "unit": [r["unit"] for r in chunk],
                "grade": [r["grade"] for r in chunk],
            }
        )
        pq.write_table(table, parts / f"part-{k}.parquet")
    return {"csv": str(plain), "gzip": str(packed), "parquet": str(parts)}


@pytest.fixture
def scheduler(dask_cluster):
    """The address of the session's local Dask cluster (tests/conftest.py)."""
    return dask_cluster.address


def _load(source, engine, scheduler=None, *, missing="keep", attributes=("city", "age"),
          targets=("unit",), **options):  # fmt: skip
    opts = TableOptions(
        source,
        attributes,
        targets,
        bins=BINS if "age" in attributes else (),
        missing=missing,
        engine=engine,
        scheduler=scheduler,
        **options,
    )
    return load_inputs(opts, need_keys=bool(options.get("id_column")))


@pytest.mark.parametrize("missing", ["keep", "drop"])
def test_duckdb_counts_equal_arrow_on_csv_gzip_and_parquet(tables, missing):
    arrow = _load(tables["csv"], "arrow", missing=missing)
    has_missing = any("missing" in label for label in arrow.table.value_labels)
    assert has_missing == (missing == "keep") and len(arrow.table.value_labels) > 20
    for kind in ("csv", "gzip", "parquet"):
        other = _load(tables[kind], "duckdb", missing=missing)
        assert other.engine == "duckdb"
        assert other.table.value_labels == arrow.table.value_labels, kind
        assert other.table.target_labels == arrow.table.target_labels, kind
        np.testing.assert_array_equal(other.counts, arrow.counts)
        assert other.table.dropped == arrow.table.dropped
        np.testing.assert_array_equal(other.table.value_codes, arrow.table.value_codes)
        np.testing.assert_array_equal(other.table.target_codes, arrow.table.target_codes)


@pytest.mark.slow
def test_dask_counts_and_codes_equal_arrow(tables, scheduler):
    for missing in ("keep", "drop"):
        arrow = _load(tables["csv"], "arrow", missing=missing, targets=("unit", "grade"))
        for kind in ("csv", "gzip", "parquet"):
            other = _load(
                tables[kind], "dask", scheduler, missing=missing, targets=("unit", "grade")
            )
            assert other.table.value_labels == arrow.table.value_labels, kind
            assert other.table.target_labels == arrow.table.target_labels, kind
            np.testing.assert_array_equal(other.counts, arrow.counts)
            np.testing.assert_array_equal(other.table.target_codes, arrow.table.target_codes)
            other.table.close()


def test_baseline_domain_is_followed_by_duckdb(tables, tmp_path):
    import csv

    arrow = _load(tables["csv"], "arrow", attributes=("grade",))
    path = tmp_path / "baseline.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["grade", "count"])
        writer.writerow(["0", 0])  # listed first, never seen
        writer.writerows([label, 5] for label in reversed(arrow.table.value_labels))
    with_arrow = _load(tables["csv"], "arrow", attributes=("grade",), baseline=str(path))
    with_duckdb = _load(tables["parquet"], "duckdb", attributes=("grade",), baseline=str(path))
    assert with_duckdb.table.value_labels == with_arrow.table.value_labels
    assert with_duckdb.table.value_labels[0] == "0"
    np.testing.assert_array_equal(with_duckdb.counts, with_arrow.counts)
    assert with_duckdb.counts[:, 0].sum() == 0


ASSESS = ["-x", "city,age", "-y", "unit", "--bins", "age=18,30,45.5", "--missing", "keep",
          "-m", "kld,cst,mis"]  # fmt: skip


def _assess(source, engine, *extra, flags=ASSESS):
    """assess --json of ``source`` with ``engine``, without the engine field."""
    result = run("assess", source, *flags, "--json", "--engine", engine, *extra)
    assert result.exit_code in (0, 1), result.output
    document = json.loads(result.stdout)
    assert document.pop("engine") == engine
    return document


@pytest.mark.slow
def test_assess_json_is_the_same_for_every_engine(tables, scheduler):
    expected = _assess(tables["csv"], "arrow")
    assert expected["released"] == 600
    assert _assess(tables["csv"], "duckdb") == expected
    assert _assess(tables["parquet"], "duckdb") == expected
    assert _assess(tables["gzip"], "dask", "--scheduler", scheduler) == expected
    assert _assess(tables["parquet"], "dask", "--scheduler", scheduler) == expected
    url = "file://" + tables["parquet"]  # any fsspec URL: read by the workers through fsspec
    assert _assess(url, "dask", "--scheduler", scheduler) == expected


def test_missing_error_is_the_same_sentence(tables):
    flags = ["-x", "city,age", "-y", "unit", "--bins", "age=18,30", "--json"]
    arrow = run("assess", tables["csv"], *flags, "--engine", "arrow")
    duck = run("assess", tables["csv"], *flags, "--engine", "duckdb")
    assert_bad_input(arrow, "missing value in 'city' or 'age' or 'unit'", "(first at lines")
    assert duck.stderr == arrow.stderr


def test_non_numeric_binned_value_names_its_line(write_csv):
    path = write_csv("bad.csv", [["age", "y"], ["20", "a"], ["31", "b"], ["old", "a"]])
    result = run("assess", path, "-x", "age", "-y", "y", "--bins", "age=30", "--engine", "duckdb")
    assert_bad_input(result, "line 4: column 'age' has the non-numeric value 'old'")


def _replay(table, engine, tmp_path, *extra):
    out = tmp_path / f"decisions-{engine}.csv"
    result = run(
        "replay", table, str(SAMPLE / "requests.csv"), "-o", str(out), "--engine", engine,
        "--config", str(SAMPLE / "distgate.toml"), "--json", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    return out.read_bytes(), document["decisions"], document["engine"]


@pytest.mark.slow
def test_replay_decisions_are_the_same_for_every_engine(tmp_path, scheduler):
    folder = tmp_path / "soldiers"
    folder.mkdir()
    table = pacsv.read_csv(SAMPLE / "soldiers.csv")
    for k, start in enumerate(range(0, table.num_rows, 4000)):
        pq.write_table(table.slice(start, 4000), folder / f"part-{k}.parquet")
    expected, counts, _ = _replay(str(SAMPLE / "soldiers.csv"), "arrow", tmp_path)
    assert counts["released"] > 0 and counts["queued"] > 0
    for table_source, engine, extra in (
        (str(SAMPLE / "soldiers.csv"), "duckdb", ()),
        (str(folder), "duckdb", ()),
        (str(folder), "dask", ("--scheduler", scheduler)),
    ):
        decisions, _, used = _replay(table_source, engine, tmp_path, *extra)
        assert used == engine
        assert decisions == expected, (engine, table_source)


def test_replay_unknown_key_is_named_by_duckdb(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("id\nS00001\nNOPE\n")
    result = run(
        "replay", str(SAMPLE / "soldiers.csv"), str(log), "--engine", "duckdb",
        "--config", str(SAMPLE / "distgate.toml"),
    )  # fmt: skip
    assert_bad_input(result, "'NOPE' (line 3)", "--skip-unknown")


def test_duplicate_key_is_refused_by_duckdb(write_csv, tmp_path):
    path = write_csv(
        "twice.csv", [["id", "x", "y"], ["a", "1", "p"], ["b", "2", "q"], ["a", "3", "p"]]
    )
    log = tmp_path / "log.csv"
    log.write_text("id\nb\n")
    result = run("replay", path, str(log), "--id", "id", "-x", "x", "-y", "y", "--engine", "duckdb")
    assert_bad_input(result, "has the key 'a' twice in column 'id' (line 2 and line 4)")


@pytest.mark.slow
def test_simulate_on_the_cluster_equals_a_local_run(scheduler):
    flags = ["--config", str(SAMPLE / "distgate.toml"), "--sequences", "3", "--requests",
             "1500", "-m", "kld,cst", "-a", "0.2", "--checkpoints", "0.5,1", "--json",
             "-q"]  # fmt: skip
    local = run("simulate", str(SAMPLE / "soldiers.csv"), *flags, "--workers", "1")
    cluster = run(
        "simulate", str(SAMPLE / "soldiers.csv"), *flags, "--engine", "dask",
        "--scheduler", scheduler,
    )  # fmt: skip
    assert local.exit_code == cluster.exit_code == 0, cluster.output
    one, other = json.loads(local.stdout), json.loads(cluster.stdout)
    assert (one.pop("engine"), other.pop("engine")) == ("arrow", "dask")
    assert one == other


@pytest.mark.slow
def test_bad_scheduler_address_is_one_sentence_within_seconds(tables):
    start = time.monotonic()
    result = run(
        "assess", tables["csv"], "-x", "city", "-y", "unit", "--missing", "drop",
        "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9",
    )  # fmt: skip
    assert time.monotonic() - start < 15
    assert_bad_input(result, "Cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'")


def test_auto_picks_duckdb_for_a_glob_and_says_so(tables):
    pattern = tables["parquet"] + "/part-*.parquet"
    flags = ["-x", "city", "-y", "unit", "--missing", "drop"]
    result = run("assess", pattern, *flags, "--json")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["engine"] == "duckdb"
    for small in (tables["csv"], tables["parquet"]):  # fits in memory: the arrow path
        assert json.loads(run("assess", small, *flags, "--json").stdout)["engine"] == "arrow"
    shown = run("assess", pattern, *flags)
    assert "note: counted with the duckdb engine (several files)" in shown.stderr


def test_engine_in_the_config_file_is_validated(tables, tmp_path):
    config = tmp_path / "distgate.toml"
    config.write_text('engine = "spark"\n')
    result = run("assess", tables["csv"], "-x", "city", "-y", "unit", "--config", str(config))
    assert_bad_input(result, "line 1: engine must be", '"duckdb"')
    config.write_text('engine = "duckdb"\nmissing = "drop"\n')
    result = run(
        "assess", tables["csv"], "-x", "city", "-y", "unit", "--config", str(config), "--json"
    )
    assert json.loads(result.stdout)["engine"] == "duckdb"


def test_unknown_engine_flag_is_refused(tables):
    result = run("assess", tables["csv"], "-x", "city", "-y", "unit", "--engine", "spark")
    assert_bad_input(result, "Unknown --engine 'spark'")


def test_a_glob_and_a_bz2_file_are_read_by_duckdb(tables, tmp_path):
    import bz2

    arrow = _load(tables["csv"], "arrow")
    packed = tmp_path / "records.csv.bz2"
    packed.write_bytes(bz2.compress(open(tables["csv"], "rb").read()))
    np.testing.assert_array_equal(_load(str(packed), "duckdb").counts, arrow.counts)
    pattern = tables["parquet"] + "/part-*.parquet"
    np.testing.assert_array_equal(_load(pattern, "duckdb").counts, arrow.counts)
    shutil.rmtree(tmp_path / "nothing", ignore_errors=True)
    result = run("assess", str(tmp_path / "none-*.csv"), "-x", "a", "-y", "b", "--engine", "duckdb")
    assert_bad_input(result, "No file matches")


def test_audit_counts_records_with_duckdb_as_with_arrow():
    flags = ["-x", "age", "-y", "location", "--bins", "age=18,30,45", "--tau", "3", "--json"]
    expected = run("audit", str(SAMPLE / "soldiers.csv"), *flags)
    duck = run("audit", str(SAMPLE / "soldiers.csv"), *flags, "--engine", "duckdb")
    assert expected.exit_code == duck.exit_code and expected.exit_code in (0, 1)
    document = json.loads(duck.stdout)
    assert document == json.loads(expected.stdout) and len(document["cells"]) > 0


@pytest.mark.slow
def test_dask_names_the_file_that_holds_a_missing_value(tables, scheduler):
    result = run(
        "assess", tables["parquet"], "-x", "city", "-y", "unit", "--engine", "dask",
        "--scheduler", scheduler,
    )  # fmt: skip
    assert_bad_input(result, "a missing value in 'city' or 'unit' (first at file", "part-0.parquet")


def test_a_header_with_a_column_twice_is_refused_by_duckdb(write_csv):
    path = write_csv("twice.csv", [["a", "b", "a"], ["1", "2", "3"]])
    result = run("assess", path, "-x", "a", "-y", "b", "--engine", "duckdb")
    assert_bad_input(result, "has the column 'a' twice in its header")


def test_auto_leaves_arrow_for_a_file_too_large_for_the_memory_left(tables, monkeypatch):
    import distgate.data.engines as engines

    assert engines.choose_engine(tables["csv"], "auto") == ("arrow", "fits in memory")
    monkeypatch.setattr(engines, "available_memory", lambda: 1 << 10)
    engine, reason = engines.choose_engine(tables["csv"], "auto")
    assert (engine, reason) == ("duckdb", "larger than memory comfortably holds")
    assert engines.choose_engine("s3://bucket/table/", "auto")[0] == "dask"
    assert engines.choose_engine(tables["csv"], "dask") == ("dask", "as asked")


@pytest.fixture(scope="module")
def frequency_table(tmp_path_factory):
    """A frequency table (a count per line, some 0) as TSV, and as a Parquet folder."""
    folder = tmp_path_factory.mktemp("weights")
    rng = np.random.default_rng(5)
    educ = ["Low", "Middle", "High"]
    rows = [["educ", "age", "region", "n"]]
    for i in range(300):
        weight = 0 if i % 13 == 0 else int(rng.integers(1, 40))
        age = "" if i % 29 == 3 else str(int(rng.integers(15, 80)))
        rows.append([educ[i % 3], age, f"R{int(rng.integers(1, 6))}", str(weight)])
    tsv = folder / "freq.tsv"
    tsv.write_text("".join("\t".join(r) + "\n" for r in rows))
    parts = folder / "freq"
    parts.mkdir()
    body = rows[1:]
    for k in range(3):
        chunk = body[k * 100 : (k + 1) * 100]
        table = pa.table(
            {
                "educ": [r[0] for r in chunk],
                "age": pa.array([int(r[1]) if r[1] else None for r in chunk], type=pa.int64()),
                "region": [r[2] for r in chunk],
                "n": pa.array([int(r[3]) for r in chunk], type=pa.int64()),
            }
        )
        pq.write_table(table, parts / f"part-{k}.parquet")
    return {"tsv": str(tsv), "parquet": str(parts)}


WEIGHTED = ["-x", "educ,age", "-y", "region", "--bins", "age=30,50", "--weight", "n",
            "--order", "educ=Low,Middle,High", "--missing", "drop", "-m", "kld,cst"]  # fmt: skip


def _assess_weighted(source, engine, *extra):
    return _assess(source, engine, *extra, flags=WEIGHTED)


@pytest.mark.slow
def test_weights_order_and_tsv_are_read_alike_by_every_engine(frequency_table, scheduler):
    expected = _assess_weighted(frequency_table["tsv"], "arrow")
    assert expected["released"] > 3000 and expected["dropped_missing"] > 0
    labels = [t["target"] for t in expected["metrics"][0]["targets"]]
    assert labels == ["R1", "R2", "R3", "R4", "R5"]
    assert _assess_weighted(frequency_table["tsv"], "duckdb") == expected
    assert _assess_weighted(frequency_table["parquet"], "duckdb") == expected
    with_dask = _assess_weighted(frequency_table["parquet"], "dask", "--scheduler", scheduler)
    assert with_dask == expected
    arrow = _load(frequency_table["tsv"], "arrow", attributes=("educ",), targets=("region",),
                  weight="n", order=(("educ", ("Low", "Middle", "High")),))  # fmt: skip
    duck = _load(frequency_table["parquet"], "duckdb", attributes=("educ",), targets=("region",),
                 weight="n", order=(("educ", ("Low", "Middle", "High")),))  # fmt: skip
    assert duck.table.value_labels == arrow.table.value_labels == ["Low", "Middle", "High"]
    np.testing.assert_array_equal(duck.table.value_codes, arrow.table.value_codes)
    assert len(duck.table.value_codes) == duck.table.size == arrow.table.size


def test_a_bad_weight_and_an_unlisted_value_are_named_by_duckdb(write_csv):
    path = write_csv("w.csv", [["x", "y", "n"], ["a", "p", "2"], ["b", "q", "1.5"]])
    result = run("assess", path, "-x", "x", "-y", "y", "--weight", "n", "--engine", "duckdb")
    assert_bad_input(result, "line 3: the weight column 'n' has the value '1.5'")
    result = run("assess", path, "-x", "x", "-y", "y", "--order", "x=a", "--engine", "duckdb")
    assert_bad_input(result, "line 3: column 'x' has the value 'b', which its order does not")


def test_other_encodings_are_left_to_arrow(tables):
    result = run("assess", tables["csv"], "-x", "city", "-y", "unit", "--missing", "drop",
                 "--encoding", "latin-1", "--engine", "duckdb")  # fmt: skip
    assert_bad_input(result, "--encoding iso8859-1 is read by the arrow engine only", "UTF-8")


TEXTS = ["a", "b", "B", " a", "10", "9", "2.5", "", "  ", "x y", "missing", "18-19", "20-24"]
NUMBERS = ["1", "17", "18", "29.5", "30", "45.5", "80", "-3", "", "NA", "NaN", "1e2"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(TEXTS), st.sampled_from(NUMBERS), st.sampled_from(TEXTS)),
        min_size=1,
        max_size=40,
    ),
    missing=st.sampled_from(["keep", "drop"]),
)
def test_duckdb_agrees_with_arrow_on_generated_tables(tmp_path, rows, missing):
    """Any mix of text, numbers as text, interval labels, blanks and null markers: the
    same labels, counts and codes, or the same refusal."""
    import csv as csvmodule

    path = tmp_path / "generated.csv"
    with open(path, "w", newline="") as handle:
        writer = csvmodule.writer(handle, lineterminator="\n")
        writer.writerow(["t", "age", "y"])
        writer.writerows(rows)
    outcomes = []
    for engine in ("arrow", "duckdb"):
        try:
            inputs = _load(str(path), engine, missing=missing, attributes=("t", "age"),
                           targets=("y",))  # fmt: skip
        except InputError as error:
            outcomes.append(("refused", str(error).split(":")[0]))
            continue
        outcomes.append((inputs.table.value_labels, inputs.table.target_labels,
                         inputs.counts.tolist(), inputs.table.value_codes.tolist()))  # fmt: skip
    assert outcomes[0] == outcomes[1]


def test_dropping_every_record_is_one_sentence_on_every_engine(write_csv):
    path = write_csv("gaps.csv", [["t", "y"], ["a", ""], ["", "p"]])
    for engine in ("arrow", "duckdb"):
        result = run("assess", path, "-x", "t", "-y", "y", "--missing", "drop", "--engine", engine)
        assert_bad_input(result, "every record has a missing value in 't' or 'y'", "leaves none")
