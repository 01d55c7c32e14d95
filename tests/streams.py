"""The Monte Carlo streams (and the KL shortcut) of the metrics whose critical values the
tests ask :class:`~distgate.stats.critical.CriticalValues` for directly."""

from distgate.stats.metrics.registry import REGISTRY

KLD = {"stream": REGISTRY["kld"].stream, "information": True}
MIS = {"stream": REGISTRY["mis"].stream}
STREAMS = {"kld": KLD, "emd": {"stream": REGISTRY["emd"].stream}}
