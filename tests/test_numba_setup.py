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
