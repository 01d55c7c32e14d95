"""The plain terminal report (output that is not a terminal) is the text rich draws there,
character for character: random reports are drawn both ways at random widths."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from distgate.report.model import BLOCKED, SAFE, Cell, Column, Report, Table, Text
from distgate.report.plain import console_width, plain_report, writes_plain
from distgate.report.render import to_console

WORD = st.text(st.sampled_from("abcdefghij XYZ019._-%()"), min_size=1, max_size=30)
SENTENCE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)


def drawn_by_rich(report: Report, width: int) -> str:
    out = io.StringIO()
    to_console(report, Console(file=out, width=width, highlight=False, soft_wrap=False))
    return out.getvalue()


@st.composite
def tables(draw) -> Table:
    n = draw(st.integers(1, 6))
    columns = [
        Column(draw(SENTENCE), numeric=draw(st.booleans()), wrap=draw(st.booleans()))
        for _ in range(n)
    ]
    table = Table(draw(SENTENCE), columns, caption=draw(st.none() | SENTENCE))
    for _ in range(draw(st.integers(0, 5))):
        style = draw(st.sampled_from([None, SAFE, BLOCKED]))
        table.rows.append([Cell(draw(WORD | SENTENCE), style=style) for _ in columns])
    return table


@st.composite
def reports(draw) -> Report:
    report = Report("assess")
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            report.blocks.append(draw(tables()))
        else:
            parts = draw(st.lists(st.tuples(SENTENCE, st.sampled_from([None, SAFE])), min_size=1))
            report.blocks.append(Text(parts))
    return report


@settings(max_examples=300, deadline=None)
@given(report=reports(), width=st.integers(8, 160))
def test_the_plain_report_is_what_rich_draws(report, width):
    plain = plain_report(report, width)
    assert plain is not None  # (one-cell characters: always drawn plain)
    assert plain == drawn_by_rich(report, width)


def test_a_report_that_fits_is_drawn_plain():
    table = Table("kld at alpha 0.2: a title", [Column("target"), Column("count", numeric=True)])
    table.add("L1", "2036")
    table.add("L2", Cell("13", style=BLOCKED))
    table.caption = "a caption under the table"
    report = Report("assess")
    report.blocks += [table, Text([("3020 released, ", None), ("6984 queued", SAFE)])]
    plain = plain_report(report, 80)
    assert plain is not None and plain == drawn_by_rich(report, 80)
    assert plain.splitlines()[:3] == [
        "kld at alpha 0.2: a title",
        "┏━━━━━━━━┳━━━━━━━┓",
        "┃ target ┃ count ┃",
    ]


def test_what_needs_rich_is_left_to_rich():
    report = Report("assess")
    report.blocks.append(Text([("ünïcode", None)]))
    assert plain_report(report, 80) is None  # rich measures character cells


def test_the_width_and_the_stream_as_rich_sees_them():
    assert console_width({"COLUMNS": "123"}) == 123
    assert writes_plain(io.StringIO(), {})
    assert not writes_plain(io.StringIO(), {"FORCE_COLOR": "1"})
