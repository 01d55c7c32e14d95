"""`distgate calibrate` through the CLI: the measured levels and the hand-over in JSON, the
table and plot outputs, exit 0 when every level is kept, 1 when one is not, 2 on bad
input."""

import pytest

from tests.cli_helpers import assert_bad_input, run, run_json
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
TABLE = [SOLDIERS, "-x", "age", "-y", "location", "--bins", "age=18,20,25,30,35,40,45,50,55"]
QUICK = ["--releases", "2000", "--draws", "2000"]


def test_json_gives_each_level_with_its_standard_error_and_the_hand_over():
    result, doc = run_json("calibrate", *TABLE, "--metric", "kld,mis", "--sizes", "20,200", *QUICK)
    assert result.exit_code == 0, result.output
    assert doc["critical"] == "auto" and doc["releases"] == 2000 and doc["within_tolerance"]
    levels = doc["levels"]
    assert {(lv["metric"], lv["alpha"], lv["size"]) for lv in levels} == {
        (m, a, n) for m in ("kld", "mis") for a in (0.05, 0.2) for n in (20, 200)
    }
    for level in levels:
        share = level["type_i_error"]
        assert level["standard_error"] == pytest.approx((share * (1 - share) / 2000) ** 0.5)
        assert abs(share - level["alpha"]) <= level["tolerance"]
        assert level["critical"] > 0
    by = {(lv["metric"], lv["alpha"], lv["size"]): lv for lv in levels}
    # mis is judged by the release size: Monte Carlo below the floor 2 m |Y| = 100
    assert by[("mis", 0.2, 20)]["method"] == "monte carlo"
    assert by[("mis", 0.2, 200)]["method"] == "chi-square (corrected)"
    handovers = {(h["metric"], h["alpha"]): h for h in doc["handovers"]}
    assert handovers[("mis", 0.2)]["size_of"] == "N"
    assert handovers[("mis", 0.2)]["monte_carlo_below"] >= 100
    assert handovers[("kld", 0.05)]["size_of"] == "n_y"
    assert handovers[("kld", 0.05)]["ladder"][-1]["size"] == 65536


@pytest.fixture(scope="module")
def even_table(tmp_path_factory):
    """3,000 records of ten values with probabilities 1/30 to 5/30, over five targets."""
    path = tmp_path_factory.mktemp("even") / "even.csv"
    counts = [100, 200, 300, 400, 500, 500, 400, 300, 200, 100]
    rows = [f"v{x},t{i % 5}" for x, c in enumerate(counts) for i in range(c)]
    path.write_text("value,target\n" + "\n".join(rows) + "\n")
    return [str(path), "-x", "value", "-y", "target"]


def test_the_published_rule_misses_its_level_and_exits_1(even_table):
    args = ["--metric", "kld", "--sizes", "20", *QUICK]
    result, doc = run_json("calibrate", *even_table, *args, "--critical", "auto-paper")
    assert result.exit_code == 1, result.output
    assert not doc["within_tolerance"] and doc["handovers"] == []
    blocked = {lv["alpha"]: lv["type_i_error"] for lv in doc["levels"]}
    # chi-square on 20-tuple targets of a large release (SPEC 3.2: 31% at alpha 0.2)
    assert blocked[0.2] > 0.25 and blocked[0.05] > 0.065
    result, doc = run_json("calibrate", *even_table, *args)
    assert result.exit_code == 0 and doc["within_tolerance"], result.output


def test_table_output_and_plot(tmp_path):
    plot = tmp_path / "levels.png"
    result = run(
        "calibrate", *TABLE, "--metric", "cst", "--sizes", "40", *QUICK, "--plot", str(plot)
    )
    assert result.exit_code == 0, result.output
    for words in (
        "Hand-over",
        "Type I error at alpha 0.05",
        "Type I error at alpha 0.2",
        "AT LEVEL",
    ):
        assert words in result.stdout
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--sizes", "20,abc"], ["--sizes", "whole numbers"]),
        (["--sizes", "0"], ["Sample sizes"]),
        (["--releases", "10"], ["null releases", "10"]),
        (["--metric", "exposure"], ["exposure", "no significance level"]),
        (["--metric", "nope"], ["'nope'"]),
        (["--alpha", "0.2,1.5"], ["alpha", "1.5"]),
        (["--alpha", "0.2,abc"], ["--alpha", "0.2,abc"]),
        (["--critical", "paper"], ["paper"]),
    ],
)
def test_bad_options_exit_2(args, words):
    assert_bad_input(run("calibrate", *TABLE, *args), *words)
