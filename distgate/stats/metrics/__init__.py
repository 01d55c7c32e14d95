"""The vectorised metric core.

Every function takes counts of shape ``(..., |Y|, |X|)`` (leading batch dimensions
allowed) and a baseline ``p`` of shape ``(|X|,)`` (or broadcastable), so one code path
serves a single assessment, a batch of candidate releases and Monte Carlo samples.
Absent targets (n_y = 0) get NaN statistics.

- :mod:`~distgate.stats.metrics.information`: KL distance, mutual information, exposure
- :mod:`~distgate.stats.metrics.pearson`: Pearson goodness of fit with merged groups
- :mod:`~distgate.stats.metrics.dixon`: Dixon's Q (r10) and its critical values
- :mod:`~distgate.stats.metrics.leakage`: distribution and entropy leakage, earth mover's distance
- :mod:`~distgate.stats.metrics.registry`: metric names mapped to tests with critical values
"""
