"""The console script keeps pandas out (pyarrow would import it only to ask whether an
object is a pandas one), reading checks do not make pyarrow import it, and the Dask engine,
which is built on pandas, lets it back in."""

import os
import subprocess
import sys

from tests.conftest import REPO, SAMPLE

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def test_a_command_runs_without_importing_pandas(tmp_path):
    probe = (
        "import sys\n"
        "from distgate.cli import run\n"
        "from distgate._runtime import keep_pandas_out\n"
        "keep_pandas_out()\n"
        "code = run(['replay', 'soldiers.csv', 'requests.csv', '-o', sys.argv[1], '-q'])\n"
        "print(code, 'pandas' in sys.modules)\n"
    )
    out = tmp_path / "d.csv"
    result = subprocess.run(
        [sys.executable, "-c", probe, str(out)],
        cwd=SAMPLE,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["0", "False"], result.stdout
    assert out.stat().st_size > 0


def test_checking_keys_that_all_have_a_value_imports_no_pandas(tmp_path):
    """pyarrow imports pandas to make a Python scalar: the check of a key column asks
    with aggregates, and text around a key is still a key."""
    path = tmp_path / "t.csv"
    path.write_text("id\n a\nb \n\u00a0c\n", encoding="utf-8")
    probe = (
        "import sys\n"
        "from distgate.data.tables import read_columns, require_values\n"
        "require_values(read_columns(sys.argv[1], ['id']), ['id'], 'table')\n"
        "print('pandas' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(path)], env=ENV, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_dask_engine_lets_pandas_in():
    probe = (
        "from distgate._runtime import keep_pandas_out\n"
        "keep_pandas_out()\n"
        "try:\n"
        "    import pandas\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('pandas was not kept out')\n"
        "import distgate.data.engines.dask\n"
        "import dask.dataframe\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=ENV, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
