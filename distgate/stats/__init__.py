"""Statistics: the vectorised metric core (:mod:`distgate.stats.metrics`) and the critical
values the metrics compare with (:mod:`distgate.stats.critical`)."""
