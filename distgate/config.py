"""``distgate.toml``: defaults for the table options so that a command needs no flags.

Looked up in the working directory (or given with ``--config FILE``). Keys: ``id``,
``attributes``, ``targets``, ``[bins]``, ``baseline``, ``metric``, ``alpha`` (and
``critical``, ``seed``). Command-line flags override the file. A relative ``baseline``
path is taken relative to the config file's folder.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distgate.errors import InputError

CONFIG_NAME = "distgate.toml"
KNOWN_KEYS = {
    "id",
    "attributes",
    "targets",
    "bins",
    "baseline",
    "metric",
    "alpha",
    "critical",
    "seed",
}


def load_config(path: str | None = None) -> dict[str, Any]:
    """The settings of ``path``, or of ./distgate.toml when it exists, else {}."""
    if path is None:
        candidate = Path(CONFIG_NAME)
        if not candidate.is_file():
            return {}
    else:
        candidate = Path(path)
        if not candidate.is_file():
            raise InputError(f"Config file '{path}' does not exist.")
    try:
        data = tomllib.loads(candidate.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"Config file '{candidate}' is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise InputError(
            f"Config file '{candidate}' has the unknown key '{unknown[0]}' "
            f"(known keys: {', '.join(sorted(KNOWN_KEYS))})."
        )
    for key in ("attributes", "targets"):
        if isinstance(data.get(key), str):
            data[key] = [data[key]]
    if "bins" in data and not isinstance(data["bins"], dict):
        raise InputError(f"Config file '{candidate}': [bins] must be a table of COLUMN = [edges].")
    if "baseline" in data and not Path(data["baseline"]).is_absolute():
        data["baseline"] = str(candidate.parent / data["baseline"])
    return data


@dataclass(frozen=True)
class TableOptions:
    """Which columns of a table make the key, the attribute X and the target Y."""

    source: str
    attributes: tuple[str, ...]
    targets: tuple[str, ...]
    id_column: str | None = None
    bins: tuple[tuple[str, tuple[float, ...]], ...] = ()
    baseline: str | None = None

    @property
    def bins_dict(self) -> dict[str, list[float]]:
        return {column: list(edges) for column, edges in self.bins}


def table_options(
    source: str,
    config: dict[str, Any],
    *,
    attributes: list[str] | None = None,
    targets: list[str] | None = None,
    id_column: str | None = None,
    bins: list[str] | None = None,
    baseline: str | None = None,
) -> TableOptions:
    """Merge command-line flags (when given) over the config file's settings."""
    from distgate.domain import parse_bins

    merged_bins = parse_bins(config.get("bins") or {})
    merged_bins.update(parse_bins(bins or []))
    attrs = _split(attributes) or list(config.get("attributes") or [])
    targs = _split(targets) or list(config.get("targets") or [])
    if not attrs:
        raise InputError("No attribute column given: name one with -x/--attr or in distgate.toml.")
    if not targs:
        raise InputError("No target column given: name one with -y/--target or in distgate.toml.")
    return TableOptions(
        source=source,
        attributes=tuple(attrs),
        targets=tuple(targs),
        id_column=id_column or config.get("id"),
        bins=tuple((c, tuple(e)) for c, e in merged_bins.items()),
        baseline=baseline or config.get("baseline"),
    )


def _split(values: list[str] | None) -> list[str]:
    """Accept both ``-x a -x b`` and ``-x a,b``."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def setting(flag: Any, config: dict[str, Any], key: str, default: Any) -> Any:
    """A flag's value when given, else the config's, else ``default``."""
    if flag is not None:
        return flag
    return config.get(key, default)
