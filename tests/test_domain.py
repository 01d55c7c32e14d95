"""Binning and encoding records into (target, value) codes."""

import numpy as np
import pytest

from distgate.domain import bin_labels, encode_table, parse_bins
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
    assert encoded.keys[0] == "S00000"


def test_text_values_sort_numerically_when_they_are_numbers(write_csv):
    path = write_csv("t.csv", [["v", "t"], ["10", "b"], ["9", "a"], ["100", "a"]])
    encoded = encode_table(path, ["v"], ["t"])
    assert encoded.value_labels == ["9", "10", "100"]
    np.testing.assert_array_equal(encoded.value_codes, [1, 0, 2])
