"""A whole release judged in several views (SPEC 4.1): one assessment, or one profile of
the full table, per view, in the order the views were given.

A release is safe only when it is safe in every view: an observer may form any of the
groupings, so the release fails when one of them fails. Each view keeps its own targets,
values, baseline and critical values; the metrics, alpha and critical-value options are
shared by every view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distgate.data.spec import TableReading
    from distgate.release.assess import Assessment
    from distgate.release.baseline import TableProfile


@dataclass(frozen=True)
class ViewHeader:
    """A view as the documents name it: ``rank@branch``, its X and its Y columns."""

    name: str
    attributes: tuple[str, ...]
    targets: tuple[str, ...]

    @classmethod
    def of_inputs(cls, inputs) -> ViewHeader:
        """The view of one of :func:`distgate.data.inputs.load_inputs`'s per-view inputs."""
        return cls(
            inputs.view_name, tuple(inputs.options.attributes), tuple(inputs.options.targets)
        )

    def to_dict(self) -> dict:
        return {"view": self.name, "x": list(self.attributes), "y": list(self.targets)}


@dataclass
class ViewsAssessment:
    """The verdict on one release in several views: ``views`` pairs each view with its
    :class:`~distgate.release.assess.Assessment`. ``safe`` only when every view is safe;
    ``reading`` says how the table was read; with ``fix``, ``repair`` holds the
    :class:`~distgate.release.views_repair.ViewsRepair`."""

    views: list[tuple[ViewHeader, Assessment]]
    reading: TableReading | None = field(default=None, repr=False, compare=False)
    repair: Any = field(default=None, repr=False, compare=False)

    @property
    def safe(self) -> bool:
        return all(assessment.safe for _, assessment in self.views)

    @property
    def released(self) -> int:
        """The records released: every view counts the same records."""
        return self.views[0][1].released

    @property
    def unsafe_views(self) -> list[str]:
        return [view.name for view, assessment in self.views if not assessment.safe]

    def view(self, name: str) -> Assessment:
        """The assessment of the view named ``name`` (``rank@branch``)."""
        for view, assessment in self.views:
            if view.name == name:
                return assessment
        known = ", ".join(view.name for view, _ in self.views)
        raise KeyError(f"No view {name!r} (the views: {known}).")

    def to_dict(self) -> dict:
        """The document of ``assess --json`` with several views (without the notes on how
        the table was read): ``safe`` (every view), ``released``, and ``views``, each a
        view's name, ``x``, ``y`` and its one-view document; with a repair, ``fix``."""
        document = {
            "safe": self.safe,
            "released": self.released,
            "views": [{**view.to_dict(), **a.to_dict()} for view, a in self.views],
        }
        if self.repair is not None:
            document["fix"] = self.repair.report_dict()
        return document

    def to_arrow(self):
        """One view's :meth:`~distgate.release.assess.Assessment.to_arrow` after another,
        a ``view`` column first."""
        import pyarrow as pa

        rows = [
            {"view": view.name, **row}
            for view, assessment in self.views
            for row in assessment.to_arrow().to_pylist()
        ]
        columns = list(dict.fromkeys(key for row in rows for key in row))
        return pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])

    def to_pandas(self):
        """:meth:`to_arrow` as a pandas DataFrame."""
        from distgate.data.frames import to_pandas

        return to_pandas(self.to_arrow())


@dataclass(frozen=True)
class ViewsProfile:
    """What the full table reveals in each of several views: each view with its
    :class:`~distgate.release.baseline.TableProfile` (its own baseline, D(y), E(y) and
    X-outliers)."""

    views: list[tuple[ViewHeader, TableProfile]]
    reading: TableReading | None = field(default=None, repr=False, compare=False)

    def view(self, name: str) -> TableProfile:
        """The profile of the view named ``name``."""
        for view, profile in self.views:
            if view.name == name:
                return profile
        known = ", ".join(view.name for view, _ in self.views)
        raise KeyError(f"No view {name!r} (the views: {known}).")

    def to_dict(self) -> dict:
        """The document of ``baseline --json`` with several views: ``views``, each a
        view's name, ``x``, ``y`` and its one-view document."""
        return {"views": [{**view.to_dict(), **p.to_dict()} for view, p in self.views]}

    def to_arrow(self, table: str = "targets"):
        """Each view's :meth:`~distgate.release.baseline.TableProfile.to_arrow` ``table``,
        a ``view`` column first."""
        import pyarrow as pa

        rows = [
            {"view": view.name, **row}
            for view, profile in self.views
            for row in profile.to_arrow(table).to_pylist()
        ]
        return pa.Table.from_pylist(rows)

    def to_pandas(self, table: str = "targets"):
        """:meth:`to_arrow` as a pandas DataFrame."""
        from distgate.data.frames import to_pandas

        return to_pandas(self.to_arrow(table))
