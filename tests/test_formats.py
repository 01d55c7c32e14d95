"""One reading layer for every input format: TSV (by name or --delimiter), any delimiter,
Parquet files and folders, Excel workbooks and text in another encoding are read exactly
like the plain CSV file, for tables and request logs alike; what cannot be read is one
sentence naming the file and what was expected."""

import csv
import gzip
import io
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

FLAGS = ["-x", "age", "-y", "location", "--bins", "age=18,20,25,30,35,40,45,50,55", "-m", "kld"]
PLAIN = (SAMPLE / "soldiers.csv").read_bytes()


def assessed(*args, input=None):
    result = run("assess", *args, *FLAGS, "--json", input=input)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def expected():
    return assessed(str(SAMPLE / "soldiers.csv"))


def as_text(delimiter: str) -> bytes:
    return PLAIN.replace(b",", delimiter.encode())


@pytest.mark.parametrize("name", ["table.tsv", "table.tab", "TABLE.TSV"])
def test_a_tsv_file_is_told_by_its_name(tmp_path, expected, name):
    path = tmp_path / name
    path.write_bytes(as_text("\t"))
    assert assessed(str(path)) == expected


def test_a_gzip_tsv_file_is_told_by_the_name_under_the_compression(tmp_path, expected):
    path = tmp_path / "table.tsv.gz"
    path.write_bytes(gzip.compress(as_text("\t")))
    assert assessed(str(path)) == expected


@pytest.mark.parametrize("given, written", [(";", ";"), ("tab", "\t"), ("|", "|")])
def test_any_delimiter_is_read_with_the_option(tmp_path, expected, given, written):
    path = tmp_path / "table.csv"
    path.write_bytes(as_text(written))
    assert assessed(str(path), "--delimiter", given) == expected


def test_a_semicolon_file_read_as_csv_names_the_delimiter_to_use(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(as_text(";"))
    result = run("assess", str(path), *FLAGS)
    assert_bad_input(result, "has no column 'age'", "use --delimiter ';'")


def test_the_delimiter_can_come_from_the_config_file(tmp_path, expected, monkeypatch):
    (tmp_path / "table.csv").write_bytes(as_text(";"))
    (tmp_path / "distgate.toml").write_text('delimiter = ";"\n')
    monkeypatch.chdir(tmp_path)
    assert assessed("table.csv") == expected


@pytest.mark.parametrize("value", ["ab", '"', ""])
def test_a_delimiter_that_is_not_one_character_is_refused(value):
    result = run("assess", str(SAMPLE / "soldiers.csv"), *FLAGS, "--delimiter", value)
    assert_bad_input(result, "--delimiter must be one character")


def test_a_bad_delimiter_in_the_config_names_the_key_and_line(tmp_path, monkeypatch):
    (tmp_path / "distgate.toml").write_text('alpha = 0.1\ndelimiter = ";;"\n')
    monkeypatch.chdir(tmp_path)
    result = run("assess", str(SAMPLE / "soldiers.csv"), *FLAGS)
    assert_bad_input(result, "distgate.toml", "line 2", "delimiter must be one character")


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


SAMPLE_TABLE = pacsv.read_csv(io.BytesIO(PLAIN))


def test_a_parquet_file_is_read_like_the_csv(tmp_path, expected):
    path = tmp_path / "table.parquet"
    pq.write_table(SAMPLE_TABLE, path)
    assert assessed(str(path)) == expected


def test_a_parquet_file_is_told_by_its_first_bytes_on_standard_input(expected):
    assert assessed("-", input=parquet_bytes(SAMPLE_TABLE)) == expected


def test_a_folder_of_parquet_files_is_one_table(tmp_path, expected):
    folder = tmp_path / "table"
    folder.mkdir()
    pq.write_table(SAMPLE_TABLE.slice(0, 4000), folder / "part-0.parquet")
    pq.write_table(SAMPLE_TABLE.slice(4000), folder / "part-1.parquet")
    (folder / "_SUCCESS").write_text("")  # written by Spark; ignored
    assert assessed(str(folder)) == expected


def test_parquet_text_columns_and_nulls_follow_the_missing_option(tmp_path):
    table = pa.table(
        {
            "age": pa.array([20, 30, None, 40], type=pa.int64()),
            "location": pa.array(["L1", "L2", "L1", None]).dictionary_encode(),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    result = run("assess", str(path), "-x", "age", "-y", "location", "-m", "kld")
    assert_bad_input(result, "2 records have a missing value", "lines 4, 5")
    result = run(
        "baseline", str(path), "-x", "age", "-y", "location", "--missing", "drop", "--json"
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["dropped_missing"] == 2
    assert [v["value"] for v in document["baseline"]] == ["20", "30"]


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: (p / "t.parquet").write_text("id,age\n1,2\n"), ["named like a Parquet file"]),
        (lambda p: (p / "t.xlsx").write_text("id,age\n1,2\n"), ["named like an Excel file"]),
        (lambda p: (p / "t.xlsx").write_bytes(b"PK\x03\x04junk"), ["cannot be read as an Excel"]),
        (lambda p: (p / "t.xls").write_bytes(b"\xd0\xcf\x11\xe0"), ["save it as .xlsx or CSV"]),
    ],
)
def test_a_file_that_is_not_what_its_name_says_is_one_sentence(tmp_path, make, words):
    make(tmp_path)
    path = next(p for p in tmp_path.iterdir())
    assert_bad_input(run("assess", str(path), *FLAGS), str(path), *words)


def test_a_folder_without_parquet_files_is_one_sentence(tmp_path):
    (tmp_path / "table.csv").write_bytes(PLAIN)
    result = run("assess", str(tmp_path), *FLAGS)
    assert_bad_input(result, "is a folder, read as a Parquet dataset", "table.csv")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_bad_input(run("assess", str(empty), *FLAGS), "a folder without Parquet files")


def test_an_excel_workbook_is_read_like_the_csv(tmp_path, expected):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for row in csv.reader(io.StringIO(PLAIN.decode())):
        sheet.append([int(v) if v.isdigit() else v for v in row])
    path = tmp_path / "table.xlsx"
    book.save(path)
    assert assessed(str(path)) == expected


def test_a_parquet_request_log_gives_the_decisions_of_the_csv_one(tmp_path):
    table = str(SAMPLE / "soldiers.csv")
    log = pacsv.read_csv(SAMPLE / "requests.csv")
    folder = tmp_path / "requests"
    folder.mkdir()
    half = log.num_rows // 2
    pq.write_table(log.slice(0, half), folder / "part-0.parquet")
    pq.write_table(log.slice(half), folder / "part-1.parquet")
    flags = [*FLAGS, "--id", "id", "-q", "-o"]
    result = run("replay", table, str(folder), *flags, str(tmp_path / "a.csv"))
    assert result.exit_code == 0, result.output
    plain = str(SAMPLE / "requests.csv")
    assert run("replay", table, plain, *flags, str(tmp_path / "b.csv")).exit_code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


LATIN = "id,age,location\n1,20,Zürich\n2,30,Bern\n3,40,Zürich\n4,50,Genève\n"


def test_text_in_another_encoding_is_read_with_the_option(tmp_path):
    utf8 = tmp_path / "utf8.csv"
    utf8.write_text(LATIN, encoding="utf-8")
    want = assessed_small(utf8)
    for encoding in ("latin-1", "cp1252", "utf-16"):
        path = tmp_path / f"{encoding}.csv"
        path.write_text(LATIN, encoding=encoding)
        assert assessed_small(path, "--encoding", encoding) == want
    assert {t["target"] for t in want["metrics"][0]["targets"]} == {"Zürich", "Bern", "Genève"}


def assessed_small(path, *extra):
    result = run("assess", str(path), "-x", "age", "-y", "location", "-m", "kld", "--json", *extra)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_the_encoding_errors_suggest_the_option(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_text(LATIN, encoding="latin-1")
    result = run("assess", str(latin), "-x", "age", "-y", "location")
    assert_bad_input(result, "not UTF-8 text, line 2", "--encoding latin-1")
    utf16 = tmp_path / "utf16.csv"
    utf16.write_text(LATIN, encoding="utf-16")
    result = run("assess", str(utf16), "-x", "age", "-y", "location")
    assert_bad_input(result, "UTF-16", "--encoding utf-16")
    result = run("assess", str(latin), "-x", "age", "-y", "location", "--encoding", "ascii")
    assert_bad_input(result, "is not ascii text: line 2")
    result = run("assess", str(latin), "-x", "age", "-y", "location", "--encoding", "klingon")
    assert_bad_input(result, "Unknown --encoding 'klingon'")


def test_audit_reads_a_tsv_counts_file_in_latin1(tmp_path):
    path = tmp_path / "counts.tsv"
    path.write_text("age\tZürich\tBern\nP1\t13\t1\nP2\t2\t0\n", encoding="latin-1")
    result = run("audit", str(path), "--encoding", "latin-1", "--json")
    assert result.exit_code in (0, 1), result.output
    columns = {c["column"] for c in json.loads(result.stdout)["cells"]}
    assert columns == {"Zürich", "Bern"}


# --- any small table gives the same assessment in every format -------------------------

LABEL = st.text(alphabet="abcxyzÄé 0123456789-", min_size=1, max_size=6).filter(
    lambda s: s.strip() == s and s.strip()
)


@st.composite
def tables(draw):
    size = draw(st.integers(min_value=2, max_value=30))
    ages = draw(st.lists(st.integers(0, 80), min_size=size, max_size=size))
    places = draw(
        st.lists(
            st.sampled_from(draw(st.lists(LABEL, min_size=1, max_size=4))),
            min_size=size,
            max_size=size,
        )
    )
    return ages, places


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.slow
@given(tables())
def test_any_small_table_is_assessed_alike_in_every_format(tmp_path_factory, data):
    ages, places = data
    folder = tmp_path_factory.mktemp("formats")
    rows = [["age", "place"], *zip(ages, places, strict=True)]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    tabbed = io.StringIO()
    csv.writer(tabbed, delimiter="\t", lineterminator="\n").writerows(rows)
    (folder / "t.csv").write_text(text.getvalue())
    (folder / "t.csv.gz").write_bytes(gzip.compress(text.getvalue().encode()))
    (folder / "t.tsv").write_text(tabbed.getvalue())
    pq.write_table(
        pa.table({"age": pa.array(ages), "place": pa.array(places)}), folder / "t.parquet"
    )
    flags = ["-x", "age", "-y", "place", "--bins", "age=18,30,50", "-m", "kld,cst", "--json"]
    documents = []
    for name in ("t.csv", "t.csv.gz", "t.tsv", "t.parquet"):
        result = run("assess", str(folder / name), *flags)
        assert result.exit_code in (0, 1), (name, result.output)
        documents.append(json.loads(result.stdout))
    assert all(d == documents[0] for d in documents[1:])
    assert documents[0]["released"] == len(ages)


def test_randomize_reads_any_delimiter_and_encoding(tmp_path):
    rows = ["zip;disease"] + [f"{z};{d}" for z in ("1000", "2000") for d in ("flu", "Grippe à")] * 5
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(rows).replace(";", ",") + "\n", encoding="utf-8")
    latin = tmp_path / "latin.csv"
    latin.write_text("\n".join(rows) + "\n", encoding="latin-1")
    flags = ["--qi", "zip", "--sensitive", "disease", "--p", "disease=0.8", "--seed", "3"]
    flags += ["--randomize", "sensitive"]
    want = run("randomize", str(plain), *flags, "-o", str(tmp_path / "a.csv"), "-q")
    assert want.exit_code == 0, want.output
    got = run(
        "randomize",
        str(latin),
        *flags,
        "-d",
        ";",
        "--encoding",
        "latin-1",
        "-o",
        str(tmp_path / "b.csv"),
        "-q",
    )
    assert got.exit_code == 0, got.output
    written = (tmp_path / "b.csv").read_text(encoding="utf-8")
    assert written == (tmp_path / "a.csv").read_text(encoding="utf-8")
    assert "Grippe à" in written


def test_an_empty_spreadsheet_column_is_skipped_and_an_unnamed_one_refused(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for row in (["age", None, "place", None], [20, None, "A", None], [None] * 4, [30, None, "B"]):
        sheet.append(row)
    book.save(tmp_path / "gaps.xlsx")
    result = run("baseline", str(tmp_path / "gaps.xlsx"), "-x", "age", "-y", "place", "--json")
    assert result.exit_code == 0, result.output
    assert [v["value"] for v in json.loads(result.stdout)["baseline"]] == ["20", "30"]
    sheet.cell(row=2, column=2, value=5)
    book.save(tmp_path / "unnamed.xlsx")
    result = run("baseline", str(tmp_path / "unnamed.xlsx"), "-x", "age", "-y", "place")
    assert_bad_input(result, "values under an empty header cell (column 2)")
