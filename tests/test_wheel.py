"""The package as a user installs it: ``python -m build`` makes an sdist and a wheel (the
wheel built from the sdist, so the sdist holds every source the build needs), and the
wheel installs into a fresh virtual environment with the core dependencies only, where
``replay`` runs the compiled gate at once (nothing is compiled on the user's machine) and
decides the sample exactly as this checkout does. A part whose extra is not installed
there says which to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE

pytestmark = pytest.mark.slow

# what a checkout holds beside its sources: environments, builds, caches, outputs
LEFT_OUT = (
    ".git",
    ".venv",
    "build",
    "dist",
    "site",
    "demo_out",
    "bench",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
    "*.so",
    "*.c",
)
COMPILED = ("distgate/gate/_kernel/_run", "distgate/data/_key_index", "distgate/stats/_null_growth")


def _run(*args, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-4000:])
    return done


def _installed(tmp_path_factory) -> Path:
    """The bin folder of a fresh venv with the wheel that python -m build made."""
    folder = tmp_path_factory.mktemp("wheel")
    dist = folder / "dist"
    # built from a copy of the sources, so that the build writes nothing into the checkout
    # (its build folder, generated C) while other tests read it
    source = folder / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*LEFT_OUT))
    # this environment's setuptools, Cython and numpy build it (pip's isolated build of the
    # same sources is what make test's own install runs)
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source))
    sdists, wheels = list(dist.glob("*.tar.gz")), list(dist.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1
    with tarfile.open(sdists[0]) as sdist:
        names = sdist.getnames()
    for source in ("setup.py", *(f"{module}.pyx" for module in COMPILED)):
        assert any(name.endswith(source) for name in names), source
    assert any(name.endswith("distgate/gate/_kernel/_keyed.pxd") for name in names)
    with zipfile.ZipFile(wheels[0]) as wheel:
        built = wheel.namelist()
    for module in COMPILED:  # each extension built, no C source shipped
        assert any(
            name.startswith(module + ".") and name.endswith((".so", ".pyd")) for name in built
        )
    assert not any(name.endswith(".c") for name in built)
    env = folder / "venv"
    # uv (the development set's installer) takes the core dependencies from its cache;
    # without it, pip downloads them
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    venv.EnvBuilder(with_pip=uv is None).create(env)
    bin_dir = env / ("Scripts" if os.name == "nt" else "bin")
    python = str(bin_dir / "python")
    if uv is not None:
        _run(uv, "pip", "install", "--quiet", "--python", python, str(wheels[0]))
    else:
        _run(python, "-m", "pip", "install", "--quiet", str(wheels[0]))
    return bin_dir


INSTALLED = (
    "import importlib.metadata as m; print(*(d.metadata['Name'] for d in m.distributions()))"
)


def test_the_wheel_installs_the_core_and_replays_the_sample_as_this_checkout(tmp_path_factory):
    """One test, so that the wheel is built once (a fixture shared by two tests was built
    again for the second when the suite's workers ran other modules' tests between them)."""
    installed = _installed(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp("run")
    listed = _run(str(installed / "python"), "-c", INSTALLED).stdout
    packages = {name.lower() for name in listed.split()}
    assert {"numpy", "scipy", "pandas", "pyarrow", "typer", "rich", "distgate"} <= packages
    assert not packages & {"numba", "llvmlite", "duckdb", "matplotlib", "openpyxl", "cython"}
    fresh, here = tmp_path / "fresh.csv", tmp_path / "here.csv"
    command = ["replay", "soldiers.csv", "requests.csv", "--quiet", "-o"]
    _run(str(installed / "distgate"), *command, str(fresh), cwd=SAMPLE)
    _run(sys.executable, "-m", "distgate", *command, str(here), cwd=SAMPLE)
    assert fresh.read_bytes() == here.read_bytes()

    # a part whose extra the core install lacks says which to install
    plot = tmp_path / "replay.png"
    done = subprocess.run(
        [
            str(installed / "distgate"),
            "replay",
            "soldiers.csv",
            "requests.csv",
            "--plot",
            str(plot),
        ],
        capture_output=True,
        text=True,
        cwd=SAMPLE,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "distgate: replay --plot needs its extra packages (matplotlib is missing): "
        "pip install 'distgate[plots]'."
    )
    assert not plot.exists()
