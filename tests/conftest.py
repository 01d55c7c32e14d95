from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

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


class DaskCluster:
    """One local Dask cluster for the tests that need one: a ``dask scheduler`` on a
    loopback ephemeral port and a ``dask worker`` of two single-thread processes, each in a
    process group of its own, in a folder of their own. Started when first asked for its
    :attr:`address`, stopped by PID (:meth:`stop`) as soon as the next test does not use
    it: idle workers kept to the end of a session cost over a minute of CPU. Those tests
    share the pytest-xdist group "dask", so one worker runs them one after another and the
    cluster starts once."""

    WORKERS = 2
    START_SECONDS = 120  # generous: the machine may be busy; a start takes a few seconds
    running: ClassVar[list[DaskCluster]] = []

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen] = []
        self._address: str | None = None

    @property
    def address(self) -> str:
        if self._address is None:
            self._address = self._start()
            DaskCluster.running.append(self)
        return self._address

    def _start(self) -> str:
        dask = str(Path(sys.executable).with_name("dask"))
        info = self.folder / "scheduler.json"
        info.unlink(missing_ok=True)
        scheduler = [dask, "scheduler", "--host", "127.0.0.1", "--port", "0"]
        scheduler += ["--no-dashboard", "--scheduler-file", str(info)]
        self._spawn(scheduler)
        deadline = time.monotonic() + self.START_SECONDS
        while not info.exists() or not info.read_text().strip():
            assert time.monotonic() < deadline, "the dask scheduler did not start"
            assert self.processes[0].poll() is None, "the dask scheduler stopped"
            time.sleep(0.05)
        address = json.loads(info.read_text())["address"]
        worker = [dask, "worker", "--scheduler-file", str(info), "--no-dashboard"]
        worker += ["--nworkers", str(self.WORKERS), "--nthreads", "1"]
        self._spawn([*worker, "--local-directory", str(self.folder)])
        from distributed import Client

        with Client(address, timeout=self.START_SECONDS) as client:
            client.wait_for_workers(self.WORKERS, timeout=self.START_SECONDS)
        return address

    def _spawn(self, command: list[str]) -> None:
        self.processes.append(
            subprocess.Popen(
                command,
                cwd=self.folder,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, stopped whole
            )
        )

    def stop(self) -> None:
        for process in reversed(self.processes):  # the workers first
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes, self._address = [], None
        if self in DaskCluster.running:
            DaskCluster.running.remove(self)


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory):
    cluster = DaskCluster(tmp_path_factory.mktemp("dask-cluster"))
    yield cluster
    cluster.stop()


def _in_the_dask_group(item) -> bool:
    group = item.get_closest_marker("xdist_group")
    return group is not None and group.args[:1] == ("dask",)


def pytest_runtest_teardown(item, nextitem):
    """Stop the shared Dask cluster once the group of the tests that use it is done (see
    DaskCluster): a test of the group between two of them keeps it running."""
    if nextitem is None or not _in_the_dask_group(nextitem):
        for cluster in DaskCluster.running:
            cluster.stop()


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
