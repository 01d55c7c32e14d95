"""The kernel-loading thread keeps scipy.linalg out of numba's set-up (distgate._runtime)."""

import subprocess
import sys
import threading

import pytest

from distgate._runtime import _NoLinalgHere, without_scipy_linalg

LOAD_WITHOUT_LINALG = """
import sys
from distgate._runtime import without_scipy_linalg
with without_scipy_linalg():
    from distgate.data.key_index import load_compiled
    load_compiled()  # numba installs its registries here and probes for a BLAS
    assert "scipy.linalg" not in sys.modules, "numba's set-up imported scipy.linalg"
    # what replay's loading thread runs next: the gate's kernel, without scipy.linalg
    import numpy as np
    from distgate.stats.critical import CriticalValues
    from distgate.gate import Gate
    codes = np.array([0, 1, 1])
    cv = CriticalValues(np.array([0.5, 0.5]), np.array([1.0, 1.0]), draws=100)
    run = Gate(codes, codes, 2, 2, ["kld", "mis"], 0.2, cv).run(np.array([0, 1, 2]))
    assert len(run.decision) == 3
import scipy.linalg  # the rest of the process imports it as usual
import numpy as np
print(scipy.linalg.det(np.eye(2)))
"""


def test_numba_loads_compiled_code_without_scipy_linalg_which_stays_importable():
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_LINALG], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"


def test_only_the_loading_thread_is_refused_scipy_linalg():
    finder = _NoLinalgHere(threading.get_ident())
    with pytest.raises(ImportError, match="scipy.linalg"):
        finder.find_spec("scipy.linalg.cython_blas")
    assert finder.find_spec("scipy.stats") is None
    answers = []
    other = threading.Thread(target=lambda: answers.append(finder.find_spec("scipy.linalg")))
    other.start()
    other.join()
    assert answers == [None]


def test_nothing_changes_when_scipy_linalg_is_imported_already():
    import scipy.linalg  # noqa: F401

    before = list(sys.meta_path)
    with without_scipy_linalg():
        assert sys.meta_path == before


WAIT_FOR_THE_LOCK = """
import sys
import time

from distgate._runtime import machine_lock

print("waiting", flush=True)
start = time.monotonic()
with machine_lock(sys.argv[1]):
    print(f"{time.monotonic() - start:.2f}", flush=True)
"""


def test_a_second_process_waits_for_the_machine_lock_until_its_holder_lets_go(tmp_path):
    """The gate is compiled by one process of the machine at a time (compiled._entry_point):
    another process waits, then loads what the first compiled."""
    import time

    from distgate._runtime import machine_lock

    path = str(tmp_path / "cache" / "distgate-compile.lock")  # its folder made on the way
    with machine_lock(path):
        other = subprocess.Popen(
            [sys.executable, "-c", WAIT_FOR_THE_LOCK, path], stdout=subprocess.PIPE, text=True
        )
        assert other.stdout.readline().strip() == "waiting"
        time.sleep(1.0)
        assert other.poll() is None  # still waiting for the lock
    waited, _ = other.communicate(timeout=60)
    assert other.returncode == 0 and float(waited) >= 0.9


def test_without_a_place_for_the_lock_the_block_runs_unlocked(tmp_path):
    from distgate._runtime import machine_lock

    (tmp_path / "a-file").write_text("")
    ran = []
    with machine_lock(str(tmp_path / "a-file" / "distgate-compile.lock")):
        ran.append(True)
    assert ran == [True]
