"""A command imports only what it uses, when it uses it: each is run in a fresh process
through the console script's own entry point, and the modules loaded when it leaves are
listed. Start-up is most of a small command's time (see docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import SAMPLE

# the console script's main(), with its exit replaced by a listing of the loaded modules
PROBE = """
import sys
import distgate._runtime as runtime

def leave(code):
    print("\\n".join(sorted(sys.modules)), file=sys.stderr)
    sys.stderr.flush()
    runtime.os._exit(code)

runtime.exit_now = leave
sys.argv = ["distgate", *sys.argv[1:]]
from distgate.__main__ import main
main()
"""

# never needed by a command on a CSV file that draws no plot
HEAVY = (
    "pandas",
    "matplotlib",
    "duckdb",
    "openpyxl",
    "dask",
    "numba",
    "pydantic",
    "scipy.stats",
    "scipy.optimize",
    "scipy.linalg",
    "pyarrow.dataset",
    "pyarrow._acero",
    "pyarrow.parquet",
    "numpy.ma",  # (pa.array asks numpy arrays whether they are masked: arrow_array does not)
)


def loaded(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=SAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return set(done.stderr.split())


def imported(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize(
    "args, also_not",
    [
        # JSON on stdout: no terminal tables, no progress bars
        (["assess", "soldiers.csv", "--json"], ("rich.table", "rich.progress")),
        (["assess", "soldiers.csv", "-m", "kld,cst,mis,dqt", "--json"], ("rich.table",)),
        (["replay", "soldiers.csv", "requests.csv", "-o", "-", "--quiet"], ("rich.progress",)),
        (["replay", "soldiers.csv", "requests.csv", "-m", "cst", "--json"], ("rich.progress",)),
        # the report in a pipe: drawn as plain text, rich not imported at all
        (["assess", "soldiers.csv", "-m", "kld,cst,mis,dqt"], ("rich",)),
        (["replay", "soldiers.csv", "requests.csv"], ("rich",)),
    ],
)
def test_a_command_on_a_csv_imports_only_what_it_uses(args, also_not):
    modules = loaded(*args)
    assert "distgate.cli" in modules and "pyarrow.csv" in modules  # the probe saw the run
    found = [name for name in (*HEAVY, *also_not) if imported(modules, name)]
    assert found == [], found


def test_a_plot_imports_matplotlib_only_when_it_draws(tmp_path):
    modules = loaded(
        "replay", "soldiers.csv", "requests.csv", "-o", str(tmp_path / "d.csv"), "--quiet",
        "--plot", str(tmp_path / "r.png"),
    )  # fmt: skip
    assert imported(modules, "matplotlib") and (tmp_path / "r.png").stat().st_size > 0
    assert not imported(modules, "pandas")
