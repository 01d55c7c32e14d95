"""The Python API (``distgate.assess``, ``baseline``, ``replay`` and the classic models):
a path, a pandas or polars DataFrame, an Arrow table or any object with the Arrow stream
or interchange protocol gives the figures of SPEC 9 and the same documents as the command
line; results turn into pandas; bad input is the command line's one sentence."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import distgate
from distgate.errors import InputError
from tests.cli_helpers import run, run_json
from tests.conftest import REPO, SAMPLE
from tests.reference import (
    AGE_BANDS,
    AGE_EDGES,
    BASELINE,
    COUNTS,
    DIXON_Q,
    KL,
    KL_CRITICAL,
    LOCATIONS,
    MUTUAL_INFORMATION,
    MUTUAL_INFORMATION_CRITICAL,
    OUTLIERS,
    PEARSON,
    PEARSON_CRITICAL,
    PEARSON_GROUPS,
)

SOLDIERS = str(SAMPLE / "soldiers.csv")
REQUESTS = str(SAMPLE / "requests.csv")
BINS = {"age": AGE_EDGES}
BIN_FLAG = "age=" + ",".join(map(str, AGE_EDGES))
TABLE = {"attributes": "age", "targets": "location", "bins": BINS}
FLAGS = ["-x", "age", "-y", "location", "--bins", BIN_FLAG]
ALL_FOUR = {"metric": "kld,mis,cst,dqt", "alpha": 0.05, "critical": "asymptotic"}
ALL_FOUR_FLAGS = ["--metric", "kld,mis,cst,dqt", "--alpha", "0.05", "--critical", "asymptotic"]
READING_NOTES = ("dropped_missing", "engine")  # what the command adds to the document


class StreamOnly:
    """A table that offers nothing but the Arrow PyCapsule stream interface."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


class InterchangeOnly:
    """A table that offers nothing but the dataframe interchange protocol."""

    def __init__(self, frame) -> None:
        self._frame = frame

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        with warnings.catch_warnings():  # pandas 3 deprecates its side of the protocol
            warnings.simplefilter("ignore")
            return self._frame.__dataframe__(nan_as_null=nan_as_null, allow_copy=allow_copy)


@pytest.fixture(scope="module")
def soldiers() -> pd.DataFrame:
    return pd.read_csv(SOLDIERS)


@pytest.fixture(scope="module")
def requests() -> pd.DataFrame:
    return pd.read_csv(REQUESTS)


def _without_notes(document: dict) -> dict:
    return {k: v for k, v in document.items() if k not in READING_NOTES}


# ------------------------------------------------------------------------- import distgate
def test_import_distgate_loads_no_numeric_library_and_the_api_on_first_use():
    probe = (
        "import sys, distgate\n"
        "heavy = [m for m in ('numpy', 'pyarrow', 'pandas', 'distgate.api') if m in sys.modules]\n"
        "assess = distgate.assess\n"
        "print(heavy, assess.__module__, 'assess' in dir(distgate))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "distgate.api.release", "True"]


def test_an_unknown_attribute_of_distgate_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'asses'"):
        distgate.asses  # noqa: B018


# ---------------------------------------------------------------------------- assess
def _assert_reference_figures(frame: pd.DataFrame) -> None:
    kld = frame[frame.metric == "kld"]
    assert list(kld.target) == LOCATIONS
    np.testing.assert_allclose(kld.statistic, KL, atol=5e-7)
    np.testing.assert_allclose(kld.critical, KL_CRITICAL, atol=5e-7)
    cst = frame[frame.metric == "cst"]
    np.testing.assert_allclose(cst.statistic, PEARSON, atol=5e-6)
    np.testing.assert_allclose(cst.critical, PEARSON_CRITICAL, atol=5e-7)
    assert list(cst.groups) == PEARSON_GROUPS
    mis = frame[(frame.metric == "mis") & frame.target.isna()].iloc[0]
    assert mis["count"] == COUNTS.sum()
    assert mis.statistic == pytest.approx(MUTUAL_INFORMATION, abs=5e-7)
    assert mis.critical == pytest.approx(MUTUAL_INFORMATION_CRITICAL, abs=5e-7)
    dqt = frame[(frame.metric == "dqt") & frame.target.isna()].iloc[0]
    assert dqt.statistic == pytest.approx(DIXON_Q, abs=2e-6)  # Q from 6-digit D(y)
    # every test says unsafe, for every target it judges (SPEC 9); mis and dqt list the
    # targets' D(y) without judging them
    judged = frame.critical.notna()
    assert not frame[judged].safe.any() and frame[~judged].safe.all()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: SOLDIERS, id="path"),
        pytest.param(lambda: pd.read_csv(SOLDIERS), id="pandas"),
        pytest.param(lambda: pl.read_csv(SOLDIERS), id="polars"),
        pytest.param(lambda: pacsv.read_csv(SOLDIERS), id="arrow"),
        pytest.param(lambda: StreamOnly(pacsv.read_csv(SOLDIERS)), id="arrow-stream"),
        pytest.param(lambda: InterchangeOnly(pd.read_csv(SOLDIERS)), id="interchange"),
    ],
)
def test_assess_gives_the_reference_figures_from_every_kind_of_table(make):
    assessment = distgate.assess(make(), **TABLE, **ALL_FOUR)
    assert assessment.safe is False
    assert assessment.released == COUNTS.sum()
    _assert_reference_figures(assessment.to_pandas())


def test_assess_gives_the_document_of_assess_json(soldiers):
    result, document = run_json("assess", SOLDIERS, *FLAGS, *ALL_FOUR_FLAGS)
    assert result.exit_code == 1
    assert distgate.assess(soldiers, **TABLE, **ALL_FOUR).to_dict() == _without_notes(document)


def test_the_long_table_has_a_row_per_metric_and_target_and_one_for_a_whole_release_test():
    frame = distgate.assess(SOLDIERS, **TABLE, **ALL_FOUR).to_pandas()
    assert list(frame.columns[:8]) == [
        "metric",
        "alpha",
        "method",
        "target",
        "count",
        "statistic",
        "critical",
        "safe",
    ]
    # kld and cst judge targets; mis and dqt the release (their row has no target) and list
    # each target's D(y) with no critical value of its own
    assert frame.groupby("metric", sort=False).size().to_dict() == {
        "kld": 5,
        "mis": 6,
        "cst": 5,
        "dqt": 6,
    }
    per_target_of_mis = frame[(frame.metric == "mis") & frame.target.notna()]
    np.testing.assert_allclose(per_target_of_mis.statistic, KL, atol=5e-7)
    assert per_target_of_mis.critical.isna().all() and per_target_of_mis.safe.all()
    assert str(frame.groups.dtype) == "Int64"  # whole numbers, empty outside cst


def test_a_release_is_safe_exactly_when_every_row_of_its_table_is(soldiers):
    # mis alone on the whole table: every target row is "safe" (it has no per-target
    # test), the release row is not
    unsafe = distgate.assess(soldiers, **TABLE, metric="mis", alpha=0.05)
    frame = unsafe.to_pandas()
    assert unsafe.safe is False and frame.safe.all() == unsafe.safe
    assert frame[frame.target.isna()].safe.tolist() == [False]
    # a few records of each target are safe under mis
    few = soldiers.groupby("location").head(3)
    safe = distgate.assess(few, **TABLE, metric="mis", alpha=0.05)
    assert safe.safe is True and safe.to_pandas().safe.all()


def test_the_keywords_take_the_forms_of_the_flags_and_of_python(soldiers):
    as_python = distgate.assess(
        soldiers, attributes=["age"], targets=["location"], bins=BINS, metric=["kld", "cst"]
    )
    as_flags = distgate.assess(
        soldiers, attributes="age", targets="location", bins=[BIN_FLAG], metric="kld,cst"
    )
    assert as_python.to_dict() == as_flags.to_dict()
    ordered = distgate.assess(
        soldiers, **TABLE, order={"location": ["L5", "L4", "L3", "L2", "L1"]}
    ).to_pandas()
    assert list(ordered.target) == ["L5", "L4", "L3", "L2", "L1"]


def test_a_settings_file_serves_only_when_named(soldiers):
    named = distgate.assess(soldiers, config=SAMPLE / "distgate.toml")
    assert named.to_dict() == distgate.assess(soldiers, **TABLE, metric="kld").to_dict()
    with pytest.raises(InputError, match=r"No attribute column given: name one with attributes="):
        distgate.assess(soldiers)


def test_the_classic_models_are_assess_with_their_bound(soldiers):
    sizes = COUNTS.sum(axis=1)
    k = distgate.k_anonymity(soldiers, int(sizes.min()), **TABLE)
    assert k.safe is True
    assert (
        k.to_dict() == distgate.assess(soldiers, **TABLE, metric="kanon", threshold=1299).to_dict()
    )
    frame = k.to_pandas()
    assert frame[frame.target.notna()].statistic.tolist() == sizes.tolist()
    assert distgate.k_anonymity(soldiers, int(sizes.min()) + 1, **TABLE).safe is False

    distinct = distgate.l_diversity(soldiers, 10, **TABLE)
    assert distinct.safe is True  # every location has all ten age bands
    entropy = distgate.l_diversity(soldiers, 7, diversity="entropy", **TABLE)
    assert entropy.to_dict() == (
        distgate.assess(
            soldiers, **TABLE, metric="ldiv", threshold={"ldiv": 7}, diversity="entropy"
        ).to_dict()
    )
    by_target = entropy.to_pandas().dropna(subset=["target"])
    assert by_target.set_index("target").safe.to_dict() == {
        "L1": False,
        "L2": True,
        "L3": False,
        "L4": False,
        "L5": False,
    }

    close = distgate.t_closeness(soldiers, 0.1, **TABLE).to_pandas()
    failing = close[~close.safe & close.target.notna()]
    assert failing.target.tolist() == OUTLIERS


def test_threshold_takes_a_number_a_mapping_or_the_flag_texts(soldiers):
    metrics = {"metric": "kanon,ldiv"}
    by_number = distgate.assess(soldiers, **TABLE, **metrics, threshold=5)
    by_mapping = distgate.assess(soldiers, **TABLE, **metrics, threshold={"kanon": 5, "ldiv": 5})
    by_texts = distgate.assess(soldiers, **TABLE, **metrics, threshold=["kanon=5", "ldiv=5"])
    assert by_number.to_dict() == by_mapping.to_dict() == by_texts.to_dict()
    with pytest.raises(InputError, match="names no metric that takes one"):
        distgate.assess(soldiers, **TABLE, metric="kld", threshold={"kld": 1})


# -------------------------------------------------------------------------- baseline
def test_baseline_gives_the_reference_profile_and_the_document_of_baseline_json(soldiers):
    profile = distgate.baseline(pl.from_pandas(soldiers), **TABLE)
    result, document = run_json("baseline", SOLDIERS, *FLAGS)
    assert result.exit_code == 0
    assert profile.to_dict() == _without_notes(document)
    targets = profile.to_pandas()
    assert list(targets.columns) == ["target", "count", "kl", "exposure", "outlier"]
    np.testing.assert_allclose(targets.kl, KL, atol=5e-7)
    assert targets[targets.outlier].target.tolist() == OUTLIERS
    values = profile.to_pandas("baseline")
    assert values.value.tolist() == AGE_BANDS
    np.testing.assert_allclose(values.probability, BASELINE)
    distributions = profile.to_pandas("distributions")
    assert len(distributions) == len(LOCATIONS) * len(AGE_BANDS)
    l2 = distributions[distributions.target == "L2"].probability
    np.testing.assert_allclose(l2, COUNTS[1] / COUNTS[1].sum())
    with pytest.raises(ValueError, match="targets, baseline or distributions"):
        profile.to_pandas("outliers")


def test_baseline_writes_the_file_of_baseline_o(soldiers, tmp_path):
    distgate.baseline(soldiers, **TABLE, output=tmp_path / "api.csv")
    assert run("baseline", SOLDIERS, *FLAGS, "-o", str(tmp_path / "cli.csv")).exit_code == 0
    assert (tmp_path / "api.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()


def test_a_profile_a_baseline_a_frame_or_a_file_serve_as_the_baseline(soldiers, tmp_path):
    profile = distgate.baseline(soldiers, **TABLE, output=tmp_path / "baseline.csv")
    first = soldiers.head(600)
    expected = distgate.assess(first, **TABLE, baseline=tmp_path / "baseline.csv").to_dict()
    assert distgate.assess(first, **TABLE, baseline=profile).to_dict() == expected
    assert distgate.assess(first, **TABLE, baseline=profile.baseline).to_dict() == expected
    as_frame = profile.to_pandas("baseline").rename(columns={"value": "age"})
    assert distgate.assess(first, **TABLE, baseline=as_frame).to_dict() == expected
    # and the release is judged against the whole table's distribution, not its own
    own = distgate.assess(first, **TABLE).to_dict()
    assert own["metrics"][0]["targets"] != expected["metrics"][0]["targets"]


# ---------------------------------------------------------------------------- replay
REPLAY = {**TABLE, "id": "id"}
REPLAY_FLAGS = [*FLAGS, "--id", "id"]


def test_replay_from_frames_gives_the_decisions_file_of_the_command(soldiers, requests, tmp_path):
    log = requests.head(3000)
    log.to_csv(tmp_path / "log.csv", index=False)
    written = tmp_path / "decisions.csv"
    result = run("replay", SOLDIERS, str(tmp_path / "log.csv"), *REPLAY_FLAGS, "-o", str(written))
    assert result.exit_code == 0, result.output
    replayed = distgate.replay(pl.from_pandas(soldiers), log, **REPLAY, output=tmp_path / "api.csv")
    assert (tmp_path / "api.csv").read_bytes() == written.read_bytes()
    decisions = replayed.to_pandas()
    blank = {column: [""] for column in ("released_at", "statistic", "critical")}
    from_file = pd.read_csv(written, keep_default_na=False, na_values=blank)
    assert list(decisions.columns) == list(from_file.columns)
    assert decisions.request.tolist() == list(range(3000))
    assert decisions.key.tolist() == log.id.tolist()
    for column in ("target", "value", "decision"):
        assert decisions[column].tolist() == from_file[column].tolist()
    assert decisions.released_at.dtype == "Int64"
    assert decisions.released_at.fillna(-1).tolist() == from_file.released_at.fillna(-1).tolist()
    np.testing.assert_array_equal(decisions.statistic, from_file.statistic)
    queued = decisions[decisions.decision == "queued"]
    assert len(queued) and (queued.released_at.isna() | (queued.released_at > queued.request)).all()


def test_replay_summary_is_the_summary_of_replay_json(soldiers, requests):
    log = requests.head(2000)
    replayed = distgate.replay(soldiers, log, **REPLAY)
    summary = replayed.to_pandas("summary")
    assert summary.target.tolist() == LOCATIONS
    assert summary.requested.sum() == 2000
    assert replayed.to_dict()["targets"] == summary.to_dict("records")
    by_path = distgate.replay(SOLDIERS, REQUESTS, **REPLAY)
    assert by_path.to_dict()["requests"] == len(requests)
    with pytest.raises(ValueError, match="decisions, summary"):
        replayed.to_pandas("queue")


def test_a_replay_with_a_state_recognises_the_same_request_frame(soldiers, requests, tmp_path):
    state = tmp_path / "gate.db"
    log = requests.head(1500)
    first = distgate.replay(soldiers, log, **REPLAY, state=state)
    again = distgate.replay(soldiers, log.copy(), **REPLAY, state=state)
    assert (first.resumed, again.resumed) == (0, 1500)  # decided already: nothing again
    assert again.to_pandas().equals(first.to_pandas())
    following = distgate.replay(soldiers, requests.iloc[1500:2000], **REPLAY, state=state)
    assert following.resumed == 0 and following.first_request == 1500


def test_replay_refuses_a_weight_and_two_standard_inputs(soldiers, requests, tmp_path):
    settings = tmp_path / "distgate.toml"
    settings.write_text('attributes = ["age"]\ntargets = ["location"]\nweight = "n"\n')
    with pytest.raises(InputError, match="replay cannot take a weight column"):
        distgate.replay(soldiers, requests, config=settings)
    with pytest.raises(InputError, match="cannot both be read from standard input"):
        distgate.replay("-", "-", **REPLAY)


# ------------------------------------------------------------------- tables in memory
def test_nan_in_a_frame_is_a_missing_value_as_in_pandas(soldiers):
    ages = soldiers.age.astype(float).copy()
    ages.iloc[[4, 9]] = np.nan
    with_gaps = soldiers.assign(age=ages)
    as_polars = pl.from_pandas(soldiers).with_columns(pl.Series("age", ages.to_numpy()))
    assert as_polars["age"].is_nan().sum() == 2  # polars keeps NaN apart from null
    for table in (with_gaps, as_polars):
        with pytest.raises(InputError) as caught:
            distgate.assess(table, **TABLE)
        assert "2 records have a missing value in 'age' (first at lines 6, 11)" in str(caught.value)
        kept = distgate.assess(table, **TABLE, missing="drop")
        assert kept.released == len(soldiers) - 2


@pytest.mark.parametrize(
    "table, options, words",
    [
        (
            lambda s: s,
            {"attributes": "agee", "targets": "location"},
            ["(a pandas DataFrame)", "agee"],
        ),
        (
            lambda s: pl.from_pandas(s),
            {"attributes": "agee", "targets": "location"},
            ["(a polars DataFrame)"],
        ),
        (lambda s: s.head(0), TABLE, ["(a pandas DataFrame) has a header but no records"]),
        (
            lambda s: s.assign(age=s.age.astype(str).where(s.index != 7, "old")),
            TABLE,
            ["line 9: column 'age' has the non-numeric value 'old'"],
        ),
        (
            lambda s: s.assign(location=[1, "a"] * (len(s) // 2)),
            TABLE,
            ["(a pandas DataFrame) cannot be converted to Arrow", "location"],
        ),
        (lambda s: s.to_dict("list"), TABLE, ["not a dict"]),
        (
            lambda s: 42,
            TABLE,
            ["A table is a file name, a pandas or polars DataFrame", "not an int"],
        ),
        (lambda s: s, {**TABLE, "engine": "duckdb"}, ["duckdb engine reads files"]),
        (lambda s: SOLDIERS + ".missing", TABLE, ["does not exist"]),
    ],
)
def test_bad_tables_are_one_sentence_naming_what_is_wrong(soldiers, table, options, words):
    with pytest.raises(InputError) as caught:
        distgate.assess(table(soldiers), **options)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)


def test_a_request_frame_is_checked_like_a_request_log(soldiers):
    log = pd.DataFrame({"id": ["S00001", "nobody", "S00002"]})
    with pytest.raises(InputError) as caught:
        distgate.replay(soldiers, log, **REPLAY)
    assert str(caught.value) == (
        "The request log (a pandas DataFrame) has 1 key that is not in the table "
        "(a pandas DataFrame): 'nobody' (line 3) (use --skip-unknown to mark them unknown "
        "and go on)."
    )
    skipped = distgate.replay(soldiers, log, **REPLAY, skip_unknown=True).to_pandas()
    assert skipped.decision.tolist() == ["released", "unknown", "released"]
    assert skipped.target.isna().tolist() == [False, True, False]


def test_whole_number_keys_in_frames_match_as_text(soldiers):
    numbered = soldiers.assign(id=range(100, 100 + len(soldiers)))
    log = pd.DataFrame({"id": [105, 100, 9999 + 100]})
    decisions = distgate.replay(numbered, log, **REPLAY).to_pandas()
    assert decisions.key.tolist() == ["105", "100", "10099"]
    assert decisions.target.tolist() == soldiers.location.iloc[[5, 0, 9999]].tolist()


def test_a_frame_keeps_pandas_categories_and_text_labels(soldiers):
    categorical = soldiers.astype({"location": "category"})
    assert (
        distgate.assess(categorical, **TABLE).to_dict()
        == distgate.assess(soldiers, **TABLE).to_dict()
    )


def test_to_pandas_works_in_a_process_where_the_command_line_kept_pandas_out():
    probe = (
        "from distgate._runtime import refuse_pandas_probes\n"
        "import pyarrow.csv\n"
        "refuse_pandas_probes()\n"
        "import distgate\n"
        f"a = distgate.assess(pyarrow.csv.read_csv({SOLDIERS!r}), attributes='age', "
        "targets='location')\n"
        "print(type(a.to_pandas()).__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "DataFrame"


def test_the_package_hands_on_every_name_of_the_api_and_no_other():
    # distgate/__init__.py lists the names to keep the API's import off start-up
    import distgate.api

    assert sorted(distgate._API) == sorted(distgate.api.__all__)
