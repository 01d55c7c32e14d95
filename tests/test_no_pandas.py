"""The console script refuses pandas to pyarrow's looks for it (distgate._runtime): reading
and converting columns loads no pandas, and every import of pandas written in Python (an
import statement, importlib) loads it as anywhere, so that a part built on pandas works.
Each case runs in a fresh process, where pandas is not loaded yet."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, SAMPLE

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _run(probe: str, *args: str, refusing: bool = True) -> str:
    """Run ``probe`` in a fresh process (after refuse_pandas_probes(), as the console
    script does, when ``refusing``); the last line it printed."""
    setup = "import sys\n"
    if refusing:
        setup += "from distgate._runtime import refuse_pandas_probes\nrefuse_pandas_probes()\n"
    result = subprocess.run(
        [sys.executable, "-c", setup + probe, *args],
        cwd=SAMPLE,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_a_command_runs_without_importing_pandas(tmp_path):
    probe = (
        "from distgate.cli import run\n"
        "code = run(['replay', 'soldiers.csv', 'requests.csv', '-o', sys.argv[1], '-q'])\n"
        "print(code, 'pandas' in sys.modules)\n"
    )
    out = tmp_path / "d.csv"
    assert _run(probe, str(out)) == "0 False"
    assert out.read_text().count("\n") == 10_041  # a header and one line per request


def test_pyarrow_conversions_and_modules_that_look_for_pandas_load_none():
    probe = (
        "import pyarrow as pa, pyarrow.compute as pc, numpy as np\n"
        "import pyarrow.dataset, pyarrow.parquet\n"  # compiled modules that look at import
        "gaps = pa.chunked_array([pa.array([1, None, 3])]).to_numpy()\n"
        "numbers = pa.array(np.arange(5)).to_numpy()\n"
        "print(np.nansum(gaps), pc.sum(numbers).as_py(), 'pandas' in sys.modules)\n"
    )
    assert _run(probe) == "4.0 10 False"


@pytest.mark.parametrize(
    "asking",
    [
        "import pandas",
        "from pandas import DataFrame",
        "import pandas.api.types",
        "import importlib; importlib.import_module('pandas')",
        "import importlib.util; assert importlib.util.find_spec('pandas'); import pandas",
        # pyarrow's own converter asks for pandas from native code
        "import pyarrow as pa; pa.array([1.5, None]).to_numpy(zero_copy_only=False); "
        "pa.table({'a': [1, 2]}).to_pandas()",
    ],
)
def test_an_import_of_pandas_written_in_python_loads_it(asking):
    probe = (
        "import pyarrow as pa\n"
        "pa.array([1, 2]).to_numpy()\n"  # pyarrow's look is refused first
        "assert 'pandas' not in sys.modules\n"
        f"{asking}\n"
        "print(type(sys.modules['pandas'].DataFrame({'a': [1]})).__name__)\n"
    )
    assert _run(probe) == "DataFrame"


def test_the_dask_engine_loads_what_it_is_built_on():
    probe = "import distgate.data.engines.dask, dask.dataframe\nprint('pandas' in sys.modules)\n"
    assert _run(probe) == "True"


def test_checking_keys_that_all_have_a_value_imports_no_pandas(tmp_path):
    """pyarrow imports pandas to make a Python scalar: the check of a key column asks
    with aggregates, and text around a key is still a key."""
    path = tmp_path / "t.csv"
    path.write_text("id\n a\nb \n\u00a0c\n", encoding="utf-8")
    probe = (
        "from distgate.data.tables import read_columns, require_values\n"
        "require_values(read_columns(sys.argv[1], ['id']), ['id'], 'table')\n"
        "print('pandas' in sys.modules)\n"
    )
    assert _run(probe, str(path), refusing=False) == "False"
