"""A part whose extra is not installed ends its command with exit 2 and one sentence naming
the pip install to run, before any work (the extras of pyproject.toml, distgate.extras).
Each package is made unimportable for the test (a None entry in sys.modules)."""

import sys

import pytest

from tests.cli_helpers import assert_bad_input, run

SAMPLE = "sample_data/soldiers.csv"
SETTINGS = ("-x", "age", "-y", "location", "--id", "id", "--bins", "age=18,20,25,30,35,40,50")


@pytest.fixture
def without(monkeypatch):
    def hide(*packages: str) -> None:
        for name in packages:
            for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                monkeypatch.delitem(sys.modules, loaded)
            monkeypatch.setitem(sys.modules, name, None)

    return hide


def test_a_plot_without_matplotlib_names_the_plots_extra(without, tmp_path):
    without("matplotlib")
    decisions, plot = tmp_path / "d.csv", tmp_path / "r.png"
    result = run(
        "replay", SAMPLE, "sample_data/requests.csv", *SETTINGS, "-o", str(decisions),
        "--plot", str(plot),
    )  # fmt: skip
    assert_bad_input(result, "replay --plot", "matplotlib", "pip install 'distgate[plots]'")
    assert not decisions.exists() and not plot.exists()  # refused before any work


def test_an_html_report_without_matplotlib_names_the_plots_extra(without, tmp_path):
    without("matplotlib")
    result = run("assess", SAMPLE, *SETTINGS, "--report", str(tmp_path / "r.html"))
    assert_bad_input(result, "--report", "pip install 'distgate[plots]'")
    assert not (tmp_path / "r.html").exists()


def test_the_duckdb_engine_without_duckdb_names_the_engines_extra(without):
    without("duckdb")
    result = run("assess", SAMPLE, *SETTINGS, "--engine", "duckdb")
    assert_bad_input(result, "duckdb engine", "pip install 'distgate[engines]'")


def test_an_excel_workbook_without_openpyxl_names_the_excel_extra(without, tmp_path):
    book = tmp_path / "soldiers.xlsx"
    book.write_bytes(b"PK\x03\x04 not really a workbook")
    without("openpyxl")
    result = run("assess", str(book), *SETTINGS)
    assert_bad_input(result, "soldiers.xlsx", "openpyxl", "pip install 'distgate[excel]'")


def test_the_dask_engine_without_dask_names_the_cluster_extra(without):
    without("distributed", "dask")
    result = run("assess", SAMPLE, *SETTINGS, "--engine", "dask")
    assert_bad_input(result, "dask engine", "pip install 'distgate[cluster]'")


def test_without_matplotlib_the_rest_of_a_command_runs(without, tmp_path):
    """Only the part that needs the extra is refused: the same replay without --plot runs."""
    without("matplotlib")
    decisions = tmp_path / "d.csv"
    result = run(
        "replay", SAMPLE, "sample_data/requests.csv", *SETTINGS, "-o", str(decisions), "--quiet"
    )
    assert result.exit_code == 0, result.output
    assert decisions.read_text().startswith("request,key,target,value,decision")
    assert "matplotlib" not in sys.modules or sys.modules["matplotlib"] is None
