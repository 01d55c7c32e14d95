"""Counting a table by its distinct records (encode_table(..., counts_only=True), what
assess, baseline and audit read) gives exactly the counts, labels and dropped records of
the record-level encoding, or the same one-sentence error naming the line."""

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distgate.data.domain import count_table, encode_table
from distgate.errors import InputError

AGES = ["17", "19", "19", "23", "31", "2.5", "x", "", "NA", "40"]
PLACES = ["L1", "L2", "L2", "L3", " ", "", "true"]
RANKS = ["a", "b", "c"]
WEIGHTS = ["1", "2", "0", "3", "2.0", "-1", "", "x"]


def outcome(path: str, counts_only: bool, **options):
    """(counts, value labels, target labels, dropped) or the error's sentence."""
    try:
        table = encode_table(path, counts_only=counts_only, **options)
    except InputError as exc:
        return str(exc)
    assert table.grouped == counts_only  # the grouped path answered, not its fallback
    counts = table.count_table()
    return counts.counts.tolist(), counts.value_labels, counts.target_labels, table.dropped


lines = st.lists(
    st.tuples(
        st.sampled_from(AGES),
        st.sampled_from(PLACES),
        st.sampled_from(RANKS),
        st.sampled_from(WEIGHTS),
    ),
    min_size=1,
    max_size=30,
)


DOMAINS = {
    "none": None,
    "text": ["17", "19", "23", "31", "40"],  # lacks some of the ages seen
    "bins": ["<18", "20-29", ">=30", "missing"],  # lacks 18-19
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=lines,
    binned=st.booleans(),
    layout=st.sampled_from(["one each", "two attributes", "two targets"]),
    weighted=st.booleans(),
    missing=st.sampled_from(["error", "drop", "keep"]),
    domain=st.sampled_from(sorted(DOMAINS)),
    ordered=st.booleans(),
)
def test_counting_by_groups_equals_encoding_every_record(
    rows, binned, layout, weighted, missing, domain, ordered
):
    text = "age,place,rank,w\n" + "".join(",".join(row) + "\n" for row in rows)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "t.csv")
        Path(path).write_text(text)
        options = dict(
            attributes=["age", "rank"] if layout == "two attributes" else ["age"],
            targets=["place", "rank"] if layout == "two targets" else ["place"],
            bins={"age": [18, 20, 30]} if binned else None,
            missing=missing,
            weight="w" if weighted else None,
            value_domain=DOMAINS[domain],
            order={"place": ["L3", "L2", "L1"]} if ordered else None,  # lacks some places
        )
        by_records = outcome(path, False, **options)
        by_groups = outcome(path, True, **options)
    assert by_groups == by_records


def test_counts_by_groups_on_a_large_table_and_their_record_codes_refused(tmp_path):
    rng = np.random.default_rng(3)
    ages = rng.integers(16, 65, size=20_000)
    places = rng.choice(["L1", "L2", "L3", "L10"], size=20_000)
    path = tmp_path / "big.csv"
    path.write_text(
        "age,place\n" + "".join(f"{a},{p}\n" for a, p in zip(ages, places, strict=True))
    )
    bins = {"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]}
    grouped = encode_table(str(path), ["age"], ["place"], bins=bins, counts_only=True)
    records = encode_table(str(path), ["age"], ["place"], bins=bins)
    assert grouped.grouped and not records.grouped
    expected = np.zeros((4, 10), dtype=np.int64)
    order = {label: i for i, label in enumerate(grouped.target_labels)}
    np.add.at(
        expected,
        ([order[p] for p in places], np.searchsorted(bins["age"], ages, side="right")),
        1,
    )
    assert grouped.target_labels == records.target_labels == ["L1", "L10", "L2", "L3"]
    assert np.array_equal(grouped.count_table().counts, expected)
    assert np.array_equal(records.count_table().counts, expected)
    assert grouped.size == records.size == 20_000
    assert np.array_equal(count_table(str(path), ["age"], ["place"], bins=bins).counts, expected)
    with pytest.raises(RuntimeError, match="counted by groups"):
        _ = grouped.target_codes


def test_an_error_found_by_groups_names_the_line_of_the_file(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("age,place\n30,L1\n31,L2\n,L1\n33,L2\n")
    with pytest.raises(InputError, match=r"line 4"):
        encode_table(str(path), ["age"], ["place"], counts_only=True)
