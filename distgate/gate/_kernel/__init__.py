"""The gate's per-request loop, compiled ahead of time (a Cython extension built by the
package's build), for kld, mis, cst, dqt and exposure with ``auto``/``asymptotic``
critical values and the count-based grace policies. Private to the gate: its one caller
is the compiled loop (:mod:`distgate.gate._compiled_loop`), which builds its arguments.

It makes exactly the decisions of the reference loop (:mod:`distgate.gate._reference_loop`: same
sums, same pass semantics, the same floating-point results to the last bit) at tens of
nanoseconds per request instead of tens of microseconds. Monte Carlo critical values of
the small-sample regime are tabulated per size beforehand (``auto`` uses them only below
2 |X| |Y| released tuples).

- :mod:`~distgate.gate._kernel.bundles`: the arguments, as named tuples of arrays
  (:class:`Tables`, :class:`Counts`, :class:`Queue`, :class:`Outputs`, :class:`Work`),
  which the gate builds and the kernel fills;
- ``_run.pyx``: the request loop and its queue passes, and :class:`KernelBinding`, which
  checks a gate's bundles once and runs the loop on them with the GIL released;
- ``_statistics.pxd`` (the test of one candidate), ``_cst.pxd`` (cst's merged groups kept
  between a target's releases), ``_sums.pxd`` (one release and the sums it changes),
  ``_queue.pxd`` (the queue in arrival order, its maps, and the safe set), ``_search.pxd``
  (the earliest safe entry after a position), ``_keyed.pxd`` (kld, mis and exposure as a
  bound per target on g(x)) and ``_rechecks.pxd`` (which queued cells a release makes
  safe): the loop's parts, compiled into it.

The cost of a request depends on the shape of the count table, never on the length of the
queue. The kernel allocates nothing.
"""
