"""The order of values: distgate's own interval labels read back sort by their numbers (so
cst's merged groups and audit's adjacent rows are those of the numeric bins), --order (or
[order] in distgate.toml) gives any order, a baseline file's row order still wins, and
audit reads distgate.toml like the other commands."""

import json

import pytest

from distgate.data.values import natural_order
from tests.cli_helpers import assert_bad_input, run
from tests.reference import AGE_BANDS, AGE_EDGES, COUNTS, LOCATIONS

# one age inside each band of AGE_BANDS
AGE_OF_BAND = [17, 18, 20, 25, 30, 35, 40, 45, 50, 60]
BINS = "age=" + ",".join(str(e) for e in AGE_EDGES)


@pytest.mark.parametrize(
    "values, ordered",
    [
        (["18-19", "<18", ">=55", "20-24", "50-54"], ["<18", "18-19", "20-24", "50-54", ">=55"]),
        (["[1.5,2)", ">=2", "<0.5", "[0.5,1.5)"], ["<0.5", "[0.5,1.5)", "[1.5,2)", ">=2"]),
        (["-5--1", ">=0", "<-5"], ["<-5", "-5--1", ">=0"]),
        (["60+", "5-19", "20-59", "0-4"], ["0-4", "5-19", "20-59", "60+"]),
        (["10", "9", "missing", "100"], ["9", "10", "100", "missing"]),
        (["20-24", "missing", "<20"], ["<20", "20-24", "missing"]),
        (["b", "18-19", "a"], ["18-19", "a", "b"]),  # not all ranges: as text
    ],
)
def test_natural_order(values, ordered):
    assert natural_order(values) == ordered


@pytest.fixture
def band_tables(write_csv):
    """The SPEC 9 reference table twice: ages as numbers, and as distgate's band labels."""
    numeric, banded = [["age", "location"]], [["band", "location"]]
    for y, location in enumerate(LOCATIONS):
        for x, band in enumerate(AGE_BANDS):
            for _ in range(COUNTS[y, x]):
                numeric.append([AGE_OF_BAND[x], location])
                banded.append([band, location])
    return write_csv("numeric.csv", numeric), write_csv("banded.csv", banded)


def metrics_of(*args):
    result = run("assess", *args, "-m", "cst,emd", "--seed", "1", "--draws", "200", "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["metrics"]


def test_band_labels_give_cst_the_merged_groups_of_the_numeric_bins(band_tables):
    numeric, banded = band_tables
    from_bins = metrics_of(numeric, "-x", "age", "-y", "location", "--bins", BINS)
    from_labels = metrics_of(banded, "-x", "band", "-y", "location")
    assert from_labels == from_bins
    # as text the labels sort 18-19 ... 50-54, <18, >=55: other groups, other statistics
    as_text = "band=" + ",".join(sorted(AGE_BANDS))
    shuffled = metrics_of(banded, "-x", "band", "-y", "location", "--order", as_text)
    statistics = [t["statistic"] for t in shuffled[0]["targets"]]
    assert statistics != [t["statistic"] for t in from_bins[0]["targets"]]


def test_band_labels_give_audit_the_adjacent_rows_of_the_numeric_bins(band_tables):
    numeric, banded = band_tables
    flags = ["-y", "location", "--tau", "60", "--fix", "--merge", "rows", "--json"]
    from_bins = run("audit", numeric, "-x", "age", "--bins", BINS, *flags)
    from_labels = run("audit", banded, "-x", "band", *flags)
    assert from_bins.exit_code == from_labels.exit_code
    plan = json.loads(from_labels.stdout)["plan"]
    assert plan == json.loads(from_bins.stdout)["plan"]
    assert plan["merge_rows"] and all(
        AGE_BANDS.index(group[-1]) - AGE_BANDS.index(group[0]) == len(group) - 1
        for group in plan["merge_rows"]
    )


EDUCATION = ["Less Than High School", "High School", "Junior College", "Bachelor", "Graduate"]


@pytest.fixture
def education(write_csv):
    counts = {  # two people with less than high school: a downward disclosure at tau 3
        "Less Than High School": [1, 1],
        "High School": [60, 50],
        "Junior College": [4, 9],
        "Bachelor": [25, 30],
        "Graduate": [12, 14],
    }
    rows = [["educ", "sex"]]
    for educ, (men, women) in counts.items():
        rows += [[educ, "M"]] * men + [[educ, "F"]] * women
    return write_csv("gss.csv", rows)


def test_order_gives_the_audit_its_adjacent_rows(education):
    flags = ["-x", "educ", "-y", "sex", "--tau", "3", "--types", "downward", "--fix", "--json"]
    alphabetical = json.loads(run("audit", education, *flags).stdout)["plan"]
    assert alphabetical["merge_rows"] == [["Junior College", "Less Than High School"]]
    order = "educ=" + ",".join(EDUCATION)
    ordered = json.loads(run("audit", education, *flags, "--order", order).stdout)["plan"]
    assert ordered["merge_rows"] == [["Less Than High School", "High School"]]
    assert ordered["safe_after"] is True


def baseline_values(*args):
    result = run("baseline", *args, "--json")
    assert result.exit_code == 0, result.output
    return [v["value"] for v in json.loads(result.stdout)["baseline"]]


def test_order_option_and_config_give_the_value_order(education, tmp_path, monkeypatch):
    order = "educ=" + ",".join(EDUCATION)
    assert baseline_values(education, "-x", "educ", "-y", "sex", "--order", order) == EDUCATION
    assert baseline_values(education, "-x", "educ", "-y", "sex") == sorted(EDUCATION)
    listed = ", ".join(f'"{v}"' for v in EDUCATION)
    (tmp_path / "distgate.toml").write_text(
        f'attributes = "educ"\ntargets = "sex"\n[order]\neduc = [{listed}]\n'
    )
    monkeypatch.chdir(tmp_path)
    assert baseline_values(education) == EDUCATION


def test_a_baseline_file_row_order_wins_over_the_order_option(education, write_csv):
    rows = [["educ", "probability"]] + [[v, 0.2] for v in reversed(EDUCATION)]
    baseline = write_csv("baseline.csv", rows)
    order = "educ=" + ",".join(EDUCATION)
    values = baseline_values(education, "-x", "educ", "-y", "sex", "-b", baseline, "--order", order)
    assert values == list(reversed(EDUCATION))


def test_targets_follow_an_order_too(education):
    flags = ["-x", "educ", "-y", "sex", "-m", "kld", "--json", "--order", "sex=M,F"]
    result = run("assess", education, *flags)
    assert [t["target"] for t in json.loads(result.stdout)["metrics"][0]["targets"]] == ["M", "F"]


@pytest.mark.parametrize(
    "order, words",
    [
        ("educ=Bachelor,Graduate", ["line 2", "'Less Than High School'", "does not list"]),
        ("educ=A,B,A", ["lists 'A' twice"]),
        ("educ", ["must look like COLUMN=VALUE,VALUE"]),
        ("region=North,South", ["'region', which is neither an attribute nor a target"]),
        ("age=1,2", ["'age', whose bins already order its values"]),
    ],
)
def test_a_bad_order_is_one_sentence(education, write_csv, order, words):
    if order.startswith("age"):
        table = write_csv("t.csv", [["age", "sex"], [20, "M"], [30, "F"]])
        result = run(
            "assess", table, "-x", "age", "-y", "sex", "--bins", "age=25", "--order", order
        )
    else:
        result = run("assess", education, "-x", "educ", "-y", "sex", "--order", order)
    assert_bad_input(result, *words)


def test_a_bad_order_in_the_config_names_the_key_and_line(education, tmp_path, monkeypatch):
    (tmp_path / "distgate.toml").write_text('targets = "sex"\n[order]\neduc = ["A", "A"]\n')
    monkeypatch.chdir(tmp_path)
    result = run("assess", education, "-x", "educ")
    assert_bad_input(result, "distgate.toml", "line 2", "order must be a table [order]")


def test_audit_reads_the_config_file(band_tables, tmp_path, monkeypatch):
    numeric, _ = band_tables
    flags = ["--tau", "60", "--json"]
    with_flags = run("audit", numeric, "-x", "age", "-y", "location", "--bins", BINS, *flags)
    (tmp_path / "distgate.toml").write_text(
        'attributes = "age"\ntargets = "location"\n[bins]\n'
        f"age = [{', '.join(map(str, AGE_EDGES))}]\n"
    )
    monkeypatch.chdir(tmp_path)
    from_config = run("audit", numeric, *flags)
    assert from_config.exit_code == with_flags.exit_code
    assert json.loads(from_config.stdout) == json.loads(with_flags.stdout)
    rows = [c["row"] for c in json.loads(from_config.stdout)["cells"]]
    assert list(dict.fromkeys(rows)) == AGE_BANDS
    # a table of counts (without the config's columns) is still read as counts
    counts = tmp_path / "counts.csv"
    counts.write_text("age,T1,T2\nP1,13,1\nP2,2,0\n")
    result = run("audit", str(counts), *flags)
    assert result.exit_code in (0, 1), result.output
    assert {c["column"] for c in json.loads(result.stdout)["cells"]} == {"T1", "T2"}


def test_an_order_reorders_the_rows_of_a_counts_file(tmp_path):
    counts = tmp_path / "counts.csv"
    counts.write_text("age,T1,T2\nP1,13,1\nP2,2,0\nP3,4,4\n")
    result = run("audit", str(counts), "--order", "age=P3,P1,P2", "--json")
    rows = [c["row"] for c in json.loads(result.stdout)["cells"]]
    assert list(dict.fromkeys(rows)) == ["P3", "P1", "P2"]
    result = run("audit", str(counts), "--order", "age=P3,P1")
    assert_bad_input(result, "'P2' in column 'age', which its order does not list")
