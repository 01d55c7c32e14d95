"""The gate's per-request loop compiled with numba, for kld, mis, cst, dqt and exposure with
``auto``/``asymptotic`` critical values and the count-based grace policies.

It makes exactly the decisions of the reference loop (:mod:`distgate.gate.reference`: same
sums, same pass semantics) at tens of nanoseconds per request instead of tens of
microseconds. Monte Carlo critical values of the small-sample regime are tabulated per size
beforehand (``auto`` uses them only below 2 |X| |Y| released tuples).

- :mod:`~distgate.gate.kernel.bundles`: the arguments, as named tuples of arrays
  (:class:`Tables`, :class:`Counts`, :class:`Queue`, :class:`Outputs`, :class:`Work`);
- :mod:`~distgate.gate.kernel.statistics`: the test of one candidate;
- :mod:`~distgate.gate.kernel.cst`: cst's statistic, from each target's merged groups kept
  between its releases;
- :mod:`~distgate.gate.kernel.sums`: one release and the sums it changes;
- :mod:`~distgate.gate.kernel.queue`: the queue in arrival order, its maps, and the safe
  set;
- :mod:`~distgate.gate.kernel.search`: the search for the earliest safe entry after a
  position;
- :mod:`~distgate.gate.kernel.keyed`: kld, mis and exposure as a bound per target on g(x);
- :mod:`~distgate.gate.kernel.rechecks`: which queued cells a release makes safe;
- :mod:`~distgate.gate.kernel.run`: the request loop and the queue passes.

The cost of a request depends on the shape of the count table, never on the length of the
queue. The kernel allocates nothing and is compiled without numba's reference counting
(``_nrt=False``): with it every call of a helper that receives a tuple of arrays paid an
atomic increment and decrement per array, twenty times the arithmetic. Helpers marked
``inline="always"`` are copied into their callers by numba before typing, and each copy
costs numba time that grows with the square of the helper's size, its own inlined helpers
included: each helper is called from one place wherever it can be, the release and the
rechecks are written once (in the request loop, not in a helper of their own), and the
rare exact test near a bound is a function compiled apart, so that the first compilation
(once per machine, cached on disk) stays near a minute and a half.

numba caches each compiled function on disk (``cache=True``) and notices when the file that
defines it changes, not when a function it calls from another module does: after editing
a module here, clear the caches (``make clean-cache``) before measuring or testing.
"""

from distgate.gate.kernel.bundles import Counts, Outputs, Queue, Tables, Work, work_space
from distgate.gate.kernel.queue import build_maps
from distgate.gate.kernel.run import run_kernel

__all__ = [
    "Counts",
    "Outputs",
    "Queue",
    "Tables",
    "Work",
    "build_maps",
    "run_kernel",
    "work_space",
]
