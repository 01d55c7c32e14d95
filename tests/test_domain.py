"""Binning and encoding records into (target, value) codes."""

import numpy as np
import pytest

from distgate.data.domain import encode_table
from distgate.data.values import bin_labels, parse_bins
from distgate.errors import InputError
from tests import reference as ref


def test_integer_edges_give_the_spec_labels():
    assert bin_labels([18, 20, 25, 30]) == ["<18", "18-19", "20-24", "25-29", ">=30"]
    assert bin_labels(ref.AGE_EDGES) == ref.AGE_BANDS


def test_non_integer_edges_are_half_open_ranges():
    assert bin_labels([0.5, 1.5]) == ["<0.5", "[0.5,1.5)", ">=1.5"]


def test_parse_bins_from_flags_and_config():
    assert parse_bins(["age=18,20"]) == {"age": [18.0, 20.0]}
    assert parse_bins({"age": [18, 20]}) == {"age": [18.0, 20.0]}
    with pytest.raises(InputError):
        parse_bins(["age"])


def test_encoding_counts_match_the_reference_table():
    from tests.conftest import SAMPLE

    encoded = encode_table(
        str(SAMPLE / "soldiers.csv"),
        ["age"],
        ["location"],
        bins={"age": ref.AGE_EDGES},
        id_column="id",
    )
    table = encoded.count_table()
    assert table.value_labels == ref.AGE_BANDS
    assert table.target_labels == ref.LOCATIONS
    np.testing.assert_array_equal(table.counts, ref.COUNTS)
    assert encoded.keys[0].as_py() == "S00000"


def test_text_values_sort_numerically_when_they_are_numbers(write_csv):
    path = write_csv("t.csv", [["v", "t"], ["10", "b"], ["9", "a"], ["100", "a"]])
    encoded = encode_table(path, ["v"], ["t"])
    assert encoded.value_labels == ["9", "10", "100"]
    np.testing.assert_array_equal(encoded.value_codes, [1, 0, 2])


@pytest.mark.parametrize(
    "ages",
    [
        ["17", "18", "19.5", "20", "31", "55"],  # fractional: binned per record
        ["17", "18", "19", "20", "31", "90000000"],  # integer range too wide for a lookup
        ["17", "18", "19", "20", "31", "55"],  # integer lookup
    ],
)
def test_numeric_binning_routes_agree(write_csv, ages):
    rows = [["age", "loc"]] + [[a, "AB"[i % 2]] for i, a in enumerate(ages)]
    encoded = encode_table(write_csv("t.csv", rows), ["age"], ["loc"], bins={"age": [18, 20, 30]})
    expected = np.searchsorted([18, 20, 30], np.array(ages, dtype=float), side="right")
    labels = bin_labels([18, 20, 30])
    assert [labels.index(encoded.value_labels[c]) for c in encoded.value_codes] == list(expected)


@pytest.mark.parametrize(
    ("bad", "words"), [("", "a missing value"), ("NA", "a missing value"), ("old", "'old'")]
)
def test_binned_column_with_a_blank_or_text_names_the_line(write_csv, bad, words):
    path = write_csv("t.csv", [["age", "loc"], ["20", "A"], ["30", "B"], [bad, "A"]])
    with pytest.raises(InputError, match="line 4") as error:
        encode_table(path, ["age"], ["loc"], bins={"age": [25]})
    assert words in str(error.value)


def test_counting_over_dictionaries_equals_counting_records(write_csv):
    rng = np.random.default_rng(3)
    rows = [["a", "b", "t"]] + [
        [str(rng.integers(0, 5)), "xyz"[rng.integers(0, 3)], f"T{rng.integers(0, 4)}"]
        for _ in range(300)
    ]
    path = write_csv("t.csv", rows)
    for attributes in (["a"], ["a", "b"]):
        encoded = encode_table(path, attributes, ["t"])
        by_records = np.zeros((len(encoded.target_labels), len(encoded.value_labels)), int)
        np.add.at(by_records, (encoded.target_codes, encoded.value_codes), 1)
        np.testing.assert_array_equal(encoded.count_table().counts, by_records)
        subset = np.arange(0, 300, 7)
        partial = np.zeros_like(by_records)
        np.add.at(partial, (encoded.target_codes[subset], encoded.value_codes[subset]), 1)
        np.testing.assert_array_equal(encoded.count_table(subset).counts, partial)


def test_categorical_labels_keep_the_file_text(write_csv):
    rows = [["zip", "loc"], ["01234", "A"], ["1234", "A"], ["true", "B"]]
    encoded = encode_table(write_csv("t.csv", rows), ["zip"], ["loc"])
    assert encoded.value_labels == ["01234", "1234", "true"]  # not all numbers: text order
