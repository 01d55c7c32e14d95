"""--plot PATH follows one rule in every command (distgate.report.figures): a path ending
in .png, .svg or .pdf is one file in that format holding one figure (simulate: the frontier
with --attack, else the first metric's evolution at the first alpha); any other path is a
folder holding every figure as PNG files. A path that cannot be written is refused before
any work."""

from __future__ import annotations

import pytest

from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

TABLE = (str(SAMPLE / "soldiers.csv"), "-x", "age", "-y", "location", "--id", "id")
BINS = ("--bins", "age=18,20,25,30,35,40,45,50,55")
QUICK_SIMULATION = ("-m", "kld,cst", "-a", "0.2", "--sequences", "2", "--requests", "600")
# how each format's file starts
MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


def simulate(*args):
    return run("simulate", *TABLE, *BINS, *QUICK_SIMULATION, "-q", *args)


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_simulate_writes_one_figure_into_a_file_named_as_an_image(tmp_path, suffix):
    target = tmp_path / f"frontier{suffix}"
    ran = simulate("--plot", target)
    assert ran.exit_code == 0, ran.output
    assert target.is_file() and target.read_bytes()[:5].startswith(MAGIC[suffix])
    assert list(tmp_path.iterdir()) == [target]


def test_the_one_figure_is_the_first_evolution_or_with_attack_the_frontier(tmp_path):
    """The figure in the file is the same picture as the folder's figure of that name."""
    for extra, name in (((), "evolution_kld_alpha0.2"), (("--attack",), "observer_frontier")):
        folder, single = tmp_path / f"all{len(extra)}", tmp_path / f"one{len(extra)}.png"
        assert simulate(*extra, "--plot", folder).exit_code == 0
        assert simulate(*extra, "--plot", single).exit_code == 0
        figures = sorted(p.name for p in folder.iterdir())
        assert figures == sorted(
            ["evolution_kld_alpha0.2.png", "evolution_cst_alpha0.2.png", "chi_square_fit.png"]
            + (["observer_frontier.png"] if extra else [])
        )
        assert single.read_bytes() == (folder / f"{name}.png").read_bytes()


def test_replay_and_calibrate_follow_the_same_rule(tmp_path):
    log = str(SAMPLE / "requests.csv")
    assert run("replay", *TABLE, *BINS, log, "-q", "--plot", tmp_path / "r.pdf").exit_code == 0
    assert (tmp_path / "r.pdf").read_bytes()[:4] == b"%PDF"
    assert run("replay", *TABLE, *BINS, log, "-q", "--plot", tmp_path / "figs").exit_code == 0
    assert [p.name for p in (tmp_path / "figs").iterdir()] == ["replay_evolution.png"]
    quick = ("-m", "cst", "--sizes", "40", "--releases", "2000", "--draws", "2000", "-q")
    ran = run("calibrate", *TABLE, *BINS, *quick, "--plot", tmp_path / "c.svg")
    assert ran.exit_code == 0, ran.output  # (cst keeps its level: tests/test_calibrate_cli.py)
    assert (tmp_path / "c.svg").read_bytes()[:5] == b"<?xml"


@pytest.mark.parametrize(
    "make, name, words",
    [
        (None, "plot.jpg", ("--plot writes .png, .svg or .pdf files", "not '.jpg'")),
        ("folder", "plot.png", ("names an image file, and it is a folder",)),
        ("file", "plots", ("names a folder for the figures", "and it is a file")),
        ("file", "plots/", ("names a folder for the figures", "and it is a file")),
        (None, "nowhere/plot.png", ("The folder of", "does not exist")),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "replay"])
def test_a_plot_path_that_cannot_be_written_is_refused_before_any_work(
    tmp_path, make, name, words, command
):
    existing = tmp_path / name.rstrip("/")
    if make == "folder":
        existing.mkdir()
    elif make == "file":
        existing.write_text("kept")
    output = tmp_path / "decisions.csv"
    if command == "simulate":
        ran = simulate("--plot", f"{tmp_path}/{name}")
    else:
        log = str(SAMPLE / "requests.csv")
        ran = run("replay", *TABLE, *BINS, log, "-o", output, "--plot", f"{tmp_path}/{name}")
    assert_bad_input(ran, *words)
    assert not output.exists()
    if make == "file":
        assert existing.read_text() == "kept"
