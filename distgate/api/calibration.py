"""The API of the tests' measured levels: :func:`calibrate`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from distgate.api.common import Table
from distgate.data.spec import Names, table_spec
from distgate.defaults import DEFAULT_CRITICAL, DEFAULT_DRAWS, DEFAULT_RELEASES, DEFAULT_SEED

if TYPE_CHECKING:
    from distgate.stats.calibration import Calibration


def calibrate(
    table: Table,
    *,
    metric: Names = None,
    alpha: float | Sequence[float] | str | None = None,
    sizes: Sequence[int] | str | None = None,
    releases: int = DEFAULT_RELEASES,
    critical: str | None = None,
    seed: int | None = None,
    draws: int = DEFAULT_DRAWS,
    **table_keywords: Any,
) -> Calibration:
    """Measure each test's type I error on ``table``'s baseline, as ``distgate
    calibrate`` does: draw ``releases`` releases under independence at each of ``sizes``
    (tuples per target, or per release for mis and dqt; default 20, 40, 100, 400, 2000)
    and count the share each test of ``metric`` (default: every metric whose critical
    value alpha sets) blocks at each ``alpha`` (default 0.05 and 0.2). The
    :class:`~distgate.stats.calibration.Calibration` is ``within`` when every test keeps
    its level; with ``critical="auto"`` it also says where each test hands over from
    Monte Carlo to its corrected asymptotic law. A table of several ``views`` is
    calibrated in each (its own baseline and targets): the first view's calibration holds
    the others' (``more_views``) and is ``within`` when every view's is."""
    from distgate.data.config import alpha_list, joined, number_list, setting
    from distgate.defaults import DEFAULT_CALIBRATION_ALPHAS, DEFAULT_CALIBRATION_SIZES
    from distgate.stats.calibration import measure_levels
    from distgate.stats.metrics.registry import parse_metrics

    spec = table_spec(table, table_keywords, "calibrate")
    settings = spec.settings()
    metrics = parse_metrics(joined(metric, ""), offline=True) if metric else None
    alphas = alpha_list(alpha, DEFAULT_CALIBRATION_ALPHAS)
    inputs, reading = spec.read(settings, counts_only=True)
    seed_value = setting(seed, settings, "seed", DEFAULT_SEED)
    mode = setting(critical, settings, "critical", DEFAULT_CRITICAL)
    chosen_sizes = number_list(
        DEFAULT_CALIBRATION_SIZES if sizes is None else sizes, "--sizes", int
    )
    calibration, *more = (
        measure_levels(
            view.critical_values(mode, seed=seed_value, draws=draws),
            metrics,
            alphas,
            chosen_sizes,
            releases=releases,
            seed=seed_value,
        )
        for view in inputs.views
    )
    for one, view in zip([calibration, *more], inputs.views, strict=True):
        one.view = view.view_name
    calibration.more_views = more
    calibration.reading = reading
    return calibration
