"""`distgate assess` through the CLI: SPEC 9 figures in JSON, exit codes, config, stdin
and every bad input of SPEC 6 that applies."""

import numpy as np
import pytest
from scipy.stats import chi2

from tests import reference as ref
from tests.cli_helpers import assert_bad_input, run, run_json
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
BINS = "age=" + ",".join(map(str, ref.AGE_EDGES))
TABLE_FLAGS = ["-x", "age", "-y", "location", "--bins", BINS]


def metric(document, name):
    return next(m for m in document["metrics"] if m["metric"] == name)


def test_json_reproduces_the_reference_figures():
    result, doc = run_json(
        "assess",
        SOLDIERS,
        *TABLE_FLAGS,
        "--metric",
        "mis,kld,cst,dqt",
        "--alpha",
        "0.05",
        "--critical",
        "asymptotic",
    )
    assert result.exit_code == 1
    assert doc["safe"] is False and doc["released"] == 10_000
    kld = metric(doc, "kld")
    assert [t["target"] for t in kld["targets"]] == ref.LOCATIONS
    assert [t["count"] for t in kld["targets"]] == ref.COUNTS.sum(axis=1).tolist()
    np.testing.assert_allclose([t["statistic"] for t in kld["targets"]], ref.KL, atol=5e-7)
    np.testing.assert_allclose([t["critical"] for t in kld["targets"]], ref.KL_CRITICAL, atol=5e-7)
    assert kld["statistic"] is None and kld["critical"] is None
    mis = metric(doc, "mis")
    assert mis["statistic"] == pytest.approx(ref.MUTUAL_INFORMATION, abs=5e-7)
    assert mis["critical"] == pytest.approx(ref.MUTUAL_INFORMATION_CRITICAL, abs=5e-7)
    assert all(t["critical"] is None for t in mis["targets"])
    np.testing.assert_allclose([t["statistic"] for t in mis["targets"]], ref.KL, atol=5e-7)
    cst = metric(doc, "cst")
    np.testing.assert_allclose([t["statistic"] for t in cst["targets"]], ref.PEARSON, rtol=1e-7)
    np.testing.assert_allclose(
        [t["critical"] for t in cst["targets"]], ref.PEARSON_CRITICAL, atol=5e-7
    )
    assert [t["groups"] for t in cst["targets"]] == ref.PEARSON_GROUPS
    dqt = metric(doc, "dqt")
    assert dqt["statistic"] == pytest.approx(ref.DIXON_Q, abs=2e-6)
    assert dqt["critical"] == pytest.approx(ref.DIXON_CRITICAL_N5, abs=0.002)
    assert all(m["safe"] is False for m in doc["metrics"])


def test_config_in_the_working_folder_supplies_the_options(monkeypatch):
    monkeypatch.chdir(SAMPLE)
    result, doc = run_json("assess", "soldiers.csv", "--metric", "kld", "--alpha", "0.2")
    assert result.exit_code == 1
    assert doc["metrics"][0]["alpha"] == 0.2
    np.testing.assert_allclose(
        [t["statistic"] for t in doc["metrics"][0]["targets"]], ref.KL, atol=5e-7
    )


def test_flags_override_the_config(monkeypatch, write_csv):
    monkeypatch.chdir(SAMPLE)
    result, doc = run_json("assess", "soldiers.csv", "--bins", "age=40", "--alpha", "0.05")
    assert result.exit_code == 1
    assert doc["metrics"][0]["alpha"] == 0.05
    assert doc["metrics"][0]["metric"] == "kld"  # from the config


def test_safe_release_exits_zero(write_csv):
    rows = [["id", "x", "y"]] + [[i, "ab"[i % 2], "PQ"[(i // 2) % 2]] for i in range(40)]
    result, doc = run_json(
        "assess", write_csv("t.csv", rows), "-x", "x", "-y", "y", "--metric", "mis,kld,cst,dqt"
    )
    assert result.exit_code == 0, result.output
    assert doc["safe"] is True


def test_standard_input_is_read_with_a_dash():
    text = (SAMPLE / "soldiers.csv").read_text()
    result = run("assess", "-", *TABLE_FLAGS, "--json", input=text)
    assert result.exit_code == 1
    assert '"released": 10000' in result.stdout
    assert_bad_input(run("assess", "-", *TABLE_FLAGS, input=""), "standard input", "empty")


def test_rich_output_names_each_target_and_the_verdict():
    result = run("assess", SOLDIERS, *TABLE_FLAGS, "--metric", "kld,dqt")
    assert result.exit_code == 1
    for location in ref.LOCATIONS:
        assert location in result.stdout
    assert "BLOCKED" in result.stdout and "UNSAFE" in result.stdout


def test_baseline_file_fixes_the_domain_and_order(write_csv):
    rows = [["id", "band", "loc"]] + [
        [i, b, "A"] for i, b in enumerate(["old", "young", "young", "mid"] * 10)
    ]
    table = write_csv("t.csv", rows)
    base = write_csv(
        "b.csv", [["band", "percent"], ["young", 50], ["mid", 25], ["old", 20], ["ancient", 5]]
    )
    result, doc = run_json(
        "assess",
        table,
        "-x",
        "band",
        "-y",
        "loc",
        "-b",
        base,
        "--metric",
        "kld",
        "--critical",
        "asymptotic",
    )
    p = np.array([0.5, 0.25, 0.2, 0.05])
    q = np.array([0.5, 0.25, 0.25, 0.0])
    expected = float((q[q > 0] * np.log2(q[q > 0] / p[q > 0])).sum())
    target = doc["metrics"][0]["targets"][0]
    assert target["statistic"] == pytest.approx(expected)
    # three values released, but the baseline's domain has four with p > 0 ("ancient" is
    # merely unseen): 3 degrees of freedom (SPEC 3.2)
    critical = chi2.ppf(0.8, 3) / (2 * 40 * np.log(2))
    assert target["critical"] == pytest.approx(critical)
    assert expected == pytest.approx(0.0805, abs=1e-4) and critical == pytest.approx(
        0.0837, abs=1e-4
    )
    assert result.exit_code == 0


# ---- bad input: exit 2, one sentence naming the file, line or column ------------------


def test_missing_file():
    assert_bad_input(run("assess", "nope.csv", "-x", "a", "-y", "b"), "nope.csv", "does not exist")


def test_empty_file(write_csv):
    assert_bad_input(
        run("assess", write_csv("e.csv", None, text=""), "-x", "a", "-y", "b"), "e.csv", "empty"
    )


def test_header_without_records(write_csv):
    path = write_csv("h.csv", [["a", "b"]])
    assert_bad_input(run("assess", path, "-x", "a", "-y", "b"), "h.csv", "no records")


def test_missing_column(write_csv):
    path = write_csv("t.csv", [["a", "b"], [1, 2]])
    assert_bad_input(run("assess", path, "-x", "age", "-y", "b"), "t.csv", "'age'")


def test_unknown_metric(write_csv):
    path = write_csv("t.csv", [["a", "b"], [1, 2]])
    assert_bad_input(run("assess", path, "-x", "a", "-y", "b", "--metric", "kld,foo"), "'foo'")


@pytest.mark.parametrize("alpha", ["0", "1", "1.5", "-0.1"])
def test_alpha_outside_the_open_unit_interval(write_csv, alpha):
    path = write_csv("t.csv", [["a", "b"], [1, 2]])
    assert_bad_input(run("assess", path, "-x", "a", "-y", "b", "--alpha", alpha), "alpha")


def test_non_numeric_value_in_a_binned_column(write_csv):
    path = write_csv("t.csv", [["age", "loc"], [20, "A"], ["old", "A"]])
    assert_bad_input(
        run("assess", path, "-x", "age", "-y", "loc", "--bins", "age=18,30"),
        "line 3",
        "'age'",
        "'old'",
    )


@pytest.mark.parametrize(("row", "column"), [(["", "A"], "'age'"), (["20", ""], "'loc'")])
def test_missing_values_in_x_or_y(write_csv, row, column):
    path = write_csv("t.csv", [["age", "loc"], [20, "A"], row])
    assert_bad_input(run("assess", path, "-x", "age", "-y", "loc"), "line 3", column)


def test_baseline_with_negative_probability(write_csv):
    table = write_csv("t.csv", [["a", "b"], ["x", "A"]])
    base = write_csv("b.csv", [["a", "probability"], ["x", 1.2], ["y", -0.2]])
    assert_bad_input(
        run("assess", table, "-x", "a", "-y", "b", "-b", base), "b.csv", "line 3", "negative"
    )


def test_baseline_not_summing_to_one(write_csv):
    table = write_csv("t.csv", [["a", "b"], ["x", "A"]])
    base = write_csv("b.csv", [["a", "probability"], ["x", 0.5], ["y", 0.4]])
    assert_bad_input(run("assess", table, "-x", "a", "-y", "b", "-b", base), "b.csv", "sum to 0.9")


def test_baseline_without_a_weight_column(write_csv):
    table = write_csv("t.csv", [["a", "b"], ["x", "A"]])
    base = write_csv("b.csv", [["a", "weight"], ["x", 1]])
    assert_bad_input(
        run("assess", table, "-x", "a", "-y", "b", "-b", base), "probability, count or percent"
    )


def test_released_value_absent_from_the_baseline_domain(write_csv):
    table = write_csv("t.csv", [["a", "b"], ["x", "A"], ["z", "A"]])
    base = write_csv("b.csv", [["a", "count"], ["x", 3], ["y", 1]])
    assert_bad_input(
        run("assess", table, "-x", "a", "-y", "b", "-b", base), "line 3", "'z'", "baseline"
    )


def test_value_listed_with_probability_zero_is_accepted_and_blocked(write_csv):
    table = write_csv("t.csv", [["a", "b"]] + [["x", "A"]] * 20 + [["z", "A"]])
    base = write_csv("b.csv", [["a", "probability"], ["x", 1.0], ["z", 0.0]])
    result, doc = run_json("assess", table, "-x", "a", "-y", "b", "-b", base)
    assert result.exit_code == 1
    assert doc["metrics"][0]["targets"][0]["statistic"] == "inf"


def test_duplicate_keys_in_the_table(write_csv):
    path = write_csv(
        "t.csv", [["id", "a", "b"], ["k1", "x", "A"], ["k2", "x", "A"], ["k1", "y", "A"]]
    )
    assert_bad_input(
        run("assess", path, "-x", "a", "-y", "b", "--id", "id"), "'k1'", "lines 2 and 4"
    )


def test_malformed_bins_option(write_csv):
    path = write_csv("t.csv", [["age", "b"], [1, "A"]])
    assert_bad_input(
        run("assess", path, "-x", "age", "-y", "b", "--bins", "age=30,20"), "increasing"
    )


def test_unknown_critical_mode(write_csv):
    path = write_csv("t.csv", [["a", "b"], ["x", "A"]])
    assert_bad_input(run("assess", path, "-x", "a", "-y", "b", "--critical", "exact"), "'exact'")


def test_bad_config_file(tmp_path, monkeypatch):
    (tmp_path / "distgate.toml").write_text("metrc = 'kld'\n")
    (tmp_path / "t.csv").write_text("a,b\nx,A\n")
    monkeypatch.chdir(tmp_path)
    assert_bad_input(run("assess", "t.csv", "-x", "a", "-y", "b"), "distgate.toml", "'metrc'")


def test_no_attribute_given(write_csv):
    path = write_csv("t.csv", [["a", "b"], ["x", "A"]])
    assert_bad_input(run("assess", path, "-y", "b"), "-x/--attr")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([str(v) for v in range(1, 10)], ref.EMD),  # numbers: ordered domain
        ([f"v{v}" for v in range(1, 10)], 2 / 3),  # text: half the L1 distance
    ],
)
def test_emd_is_ordered_for_numeric_values_and_not_for_text(write_csv, values, expected):
    rows = [["x", "y"]] + [[v, "A"] for v in values[:3]]
    table = write_csv("t.csv", rows)
    base = write_csv("b.csv", [["x", "count"]] + [[v, 1] for v in values])
    result, doc = run_json("assess", table, "-x", "x", "-y", "y", "-b", base, "--metric", "emd")
    assert doc["metrics"][0]["targets"][0]["statistic"] == pytest.approx(expected)


def test_a_repeated_metric_option_adds_to_the_list():
    # `-m mis -m kld,cst` checks all three, as `-m mis,kld,cst` does: keeping only the
    # last option would silently drop a check
    flags = [SOLDIERS, *TABLE_FLAGS, "--alpha", "0.05", "--critical", "asymptotic"]
    _, repeated = run_json("assess", *flags, "-m", "mis", "-m", "kld,cst")
    _, listed = run_json("assess", *flags, "-m", "mis,kld,cst")
    assert [m["metric"] for m in repeated["metrics"]] == ["mis", "kld", "cst"]
    assert repeated == listed


@pytest.mark.parametrize("counted", ["by groups", "record by record"])
def test_a_baseline_need_not_list_a_bin_no_record_falls_in(tmp_path, counted):
    """Fractional ages are binned per record, and every bin is a label; one without
    records needs no place in the baseline (it crashed naming no line). A bin with a record
    that the baseline lacks is bad input naming that record's line, however it is counted
    (-o makes assess encode every record)."""
    table = tmp_path / "t.csv"
    table.write_text("age,place\n21.5,L1\n25,L2\n31,L1\n33.5,L2\n22,L1\n")
    baseline = tmp_path / "b.csv"
    baseline.write_text("age,probability\n20-29,0.6\n>=30,0.4\n")
    flags = ["-x", "age", "-y", "place", "--bins", "age=18,20,30", "--baseline", str(baseline)]
    if counted == "record by record":
        flags += ["--fix", "-o", str(tmp_path / "fixed")]
    result, document = run_json("assess", str(table), *flags, "-m", "kld")
    assert result.exit_code in (0, 1), result.output
    assert document["released"] == 5
    with table.open("a") as handle:
        handle.write("19,L1\n")
    assert_bad_input(
        run("assess", str(table), *flags, "-m", "kld"), "line 7", "'18-19'", "baseline domain"
    )
