"""The plain terminal report (output that is not a terminal) follows its own layout rules
(distgate.report.plain): known reports drawn at known widths give exact text, and random
reports keep the rules' promises at random widths."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from distgate.report.layout import cell_width, fit, text_width
from distgate.report.model import BLOCKED, SAFE, Cell, Column, Report, Table, Text
from distgate.report.plain import console_width, plain_report, wrap, writes_plain


def report_of(*blocks: Table | Text) -> Report:
    report = Report("assess")
    report.blocks += blocks
    return report


def test_a_table_that_fits_takes_its_natural_widths():
    table = Table(
        "kld at alpha 0.2: a title",
        [Column("target"), Column("count", numeric=True), Column("decision")],
        caption="a caption under the table",
    )
    table.add("L1", "2036", Cell("safe", style=SAFE))
    table.add("L2", "13", Cell("BLOCKED", style=BLOCKED))
    text = Text([("3020 released, ", None), ("6984 queued", SAFE)])
    assert plain_report(report_of(table, text), 80) == (
        "kld at alpha 0.2: a title\n"
        "┏━━━━━━━━┳━━━━━━━┳━━━━━━━━━━┓\n"
        "┃ target ┃ count ┃ decision ┃\n"
        "┡━━━━━━━━╇━━━━━━━╇━━━━━━━━━━┩\n"
        "│ L1     │  2036 │ safe     │\n"
        "│ L2     │    13 │ BLOCKED  │\n"
        "└────────┴───────┴──────────┘\n"
        "a caption under the table\n"
        "3020 released, 6984 queued\n"
    )


def replay_table() -> Table:
    table = Table(
        "replay: kld at alpha 0.2",
        [
            Column("target"),
            Column("released at once", numeric=True),
            Column("released from queue", numeric=True),
        ],
        caption="a caption longer than the forty columns of this console",
    )
    table.add("L1", "232", "622")
    table.add("L2", "279", "417")
    return table


def test_a_table_wider_than_the_console_narrows_its_widest_columns_first():
    """At 40 columns the table (51 at its natural widths) has 30 for its columns' text:
    'released from queue' (19) narrows to 16, then it and 'released at once' narrow in
    turn to 12 each; 'target' keeps its 6. The headers wrap at spaces, at the bottom of
    the header row; the caption and the text wrap like text, the indented line keeping
    its indentation."""
    text = Text([("  frozen: the 2589 queued records will never leave", None)])
    assert plain_report(report_of(replay_table(), text), 40) == (
        "replay: kld at alpha 0.2\n"
        "┏━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┓\n"
        "┃        ┃  released at ┃     released ┃\n"
        "┃ target ┃         once ┃   from queue ┃\n"
        "┡━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━┩\n"
        "│ L1     │          232 │          622 │\n"
        "│ L2     │          279 │          417 │\n"
        "└────────┴──────────────┴──────────────┘\n"
        "a caption longer than the forty columns\n"
        "of this console\n"
        "  frozen: the 2589 queued records will\n"
        "  never leave\n"
    )


def test_a_table_that_cannot_narrow_enough_is_folded_into_parts():
    """At 26 columns even the narrowest widths (6, 8 and 8: headers wrapped at every
    space) need 32: the table is folded, each part repeating the key column, and each
    part narrows its widest column to fit (13 columns of text)."""
    assert plain_report(report_of(replay_table()), 26) == (
        "replay: kld at alpha 0.2\n"
        "(part 1 of 2)\n"
        "┏━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃        ┃   released at ┃\n"
        "┃ target ┃          once ┃\n"
        "┡━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ L1     │           232 │\n"
        "│ L2     │           279 │\n"
        "└────────┴───────────────┘\n"
        "replay: kld at alpha 0.2\n"
        "(part 2 of 2)\n"
        "┏━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃        ┃ released from ┃\n"
        "┃ target ┃         queue ┃\n"
        "┡━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ L1     │           622 │\n"
        "│ L2     │           417 │\n"
        "└────────┴───────────────┘\n"
        "a caption longer than the\n"
        "forty columns of this\n"
        "console\n"
    )


def test_a_column_of_sentences_wraps_and_wide_characters_take_two_columns():
    table = Table("state", [Column("item"), Column("value", wrap=True)])
    table.add("path", "a state file kept in a folder far away")
    table.add("東京", "café e\u0301 東京")  # (an e and a combining accent: one column)
    assert plain_report(report_of(table), 24) == (
        "state\n"
        "┏━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃ item ┃ value         ┃\n"
        "┡━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ path │ a state file  │\n"
        "│      │ kept in a     │\n"
        "│      │ folder far    │\n"
        "│      │ away          │\n"
        "│ 東京 │ café e\u0301 東京   │\n"
        "└──────┴───────────────┘\n"
    )


def test_a_number_is_never_cut_even_when_its_table_is_wider_than_the_console():
    table = Table("a wide value", [Column("key"), Column("value", numeric=True)])
    table.add("a", "0123456789012345678901234567890")
    lines = plain_report(report_of(table), 20).splitlines()
    assert lines[4] == "│ a   │ 0123456789012345678901234567890 │"
    assert {len(line) for line in lines[1:]} == {41}


def test_wrapping_text():
    assert wrap("supercalifragilistic word", 8) == ["supercal", "ifragili", "stic", "word"]
    assert wrap("    indented half the width", 8) == ["indented", "half the", "width"]
    assert wrap("  two  spaces kept   ", 80) == ["  two  spaces kept"]
    assert wrap("東京 東京東京", 5) == ["東京", "東京", "東京"]
    assert wrap("", 10) == [""]


def test_the_width_of_text_in_terminal_columns():
    assert text_width("L1") == 2
    assert text_width("東京") == 4
    assert text_width("e\u0301") == 1


def test_the_width_and_the_stream():
    assert console_width({"COLUMNS": "123"}) == 123
    assert console_width({"COLUMNS": "0"}) in range(1, 10_000)  # a terminal's, or 80
    assert writes_plain(io.StringIO(), {})
    assert not writes_plain(io.StringIO(), {"FORCE_COLOR": "1"})


WORD = st.text(st.sampled_from("abcdefghij XYZ019._-%()東é"), min_size=1, max_size=30)
SENTENCE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)


@st.composite
def tables(draw) -> Table:
    columns = [
        Column(draw(SENTENCE), numeric=draw(st.booleans()), wrap=draw(st.booleans()))
        for _ in range(draw(st.integers(1, 6)))
    ]
    table = Table(draw(SENTENCE), columns, caption=draw(st.none() | SENTENCE))
    for _ in range(draw(st.integers(0, 5))):
        table.rows.append([Cell(draw(WORD | SENTENCE)) for _ in columns])
    return table


@settings(max_examples=300, deadline=None)
@given(table=tables(), width=st.integers(8, 160))
def test_the_rules_hold_for_random_tables(table, width):
    """No line ends in a space; each part of the table (fit) is a box whose lines are all
    as wide, no wider than the console unless the part's narrowest widths are; and a cell
    of a column that does not wrap is shown whole, on one line."""
    lines = plain_report(report_of(table), width).splitlines()
    assert all(line == line.rstrip() for line in lines)
    tops = [i for i, line in enumerate(lines) if line.startswith("┏")]
    bottoms = [i for i, line in enumerate(lines) if line.startswith("└")]
    parts = fit(table, width)
    assert len(tops) == len(bottoms) == len(parts)
    for part, top, bottom in zip(parts, tops, bottoms, strict=True):
        box = lines[top : bottom + 1]
        drawn = text_width(box[0])
        assert {text_width(line) for line in box} == {drawn}
        narrowest = sum(cell_width(part, j) + 3 for j in range(len(part.columns))) + 1
        assert drawn <= max(width, narrowest)
        shown_cells = {cell.strip() for line in box[3:-1] for cell in line[1:-1].split("│")}
        for row in part.rows:
            for cell, column in zip(row, part.columns, strict=True):
                if not column.wrap:
                    assert cell.text.strip() in shown_cells
