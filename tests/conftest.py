import csv
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from distgate.data.config import TableOptions
from tests.reference import AGE_BANDS, COUNTS, LOCATIONS

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
# the sample table as the replay tests read it: age in SPEC 9's bands by location, keyed by id
SAMPLE_OPTIONS = TableOptions(
    str(SAMPLE / "soldiers.csv"),
    ("age",),
    ("location",),
    "id",
    (("age", (18, 20, 25, 30, 35, 40, 45, 50, 55)),),
)


def pytest_collection_modifyitems(items):
    """The tests marked slow run first (otherwise in the order collected): pytest-xdist
    hands tests out in this order, so the long ones no longer start last and leave the
    other worker idle at the end of `make test`."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_configure(config):
    """Measured hand-overs of critical values (distgate.data.cache) go to a folder of this
    run, never to the user's cache: made by the main process (the workers of pytest -n
    inherit its environment and share it) and removed at the end."""
    if not hasattr(config, "workerinput"):
        config.distgate_cache = tempfile.mkdtemp(prefix="distgate-test-cache-")
        os.environ["DISTGATE_CACHE_DIR"] = config.distgate_cache


def pytest_unconfigure(config):
    folder = getattr(config, "distgate_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_job_summary(monkeypatch):
    """Commands append a markdown summary to $GITHUB_STEP_SUMMARY when it is set (as in a
    GitHub Actions job, where this suite may run): no test writes to the job's own."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def write_csv(tmp_path):
    """Write rows (first row = header) to a CSV file in tmp_path and return its path."""

    def write(name: str, rows, text: str | None = None) -> str:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        else:
            with open(path, "w", newline="") as handle:
                csv.writer(handle, lineterminator="\n").writerows(rows)
        return str(path)

    return write


@pytest.fixture
def banded_table(write_csv):
    """The SPEC 9 reference table with the age band itself as the attribute."""
    rows = [["id", "band", "location"]]
    i = 0
    for y, location in enumerate(LOCATIONS):
        for x, band in enumerate(AGE_BANDS):
            for _ in range(COUNTS[y, x]):
                rows.append([f"k{i}", band, location])
                i += 1
    return write_csv("banded.csv", rows)
