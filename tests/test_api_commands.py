"""The Python functions of the commands that assemble several library calls
(``distgate.assess`` with ``fix``, ``audit``, ``randomize``, ``calibrate``) and the table
given as one ``TableSpec``: each function gives the figures of its command (SPEC 7's
example, the documentation's examples) and its command's ``--json`` document, and bad
input is the command's sentence."""

from __future__ import annotations

import dataclasses
import inspect

import pandas as pd
import pytest

import distgate
from distgate.data.config import KNOWN_KEYS
from distgate.data.spec import FLAGS, TABLE_KEYWORDS, TableSpec
from distgate.errors import InputError
from tests.cli_helpers import run_json
from tests.conftest import SAMPLE
from tests.reference import AGE_BANDS, AGE_EDGES, COUNTS, LOCATIONS, SPEC_UPPER

SOLDIERS = str(SAMPLE / "soldiers.csv")
SETTINGS = SAMPLE / "distgate.toml"
PUBLISHED = str(SAMPLE / "published_counts.csv")
PATIENTS = str(SAMPLE / "patients.csv")
TABLE = {"attributes": "age", "targets": "location", "bins": {"age": AGE_EDGES}}
BIN_FLAG = "age=" + ",".join(map(str, AGE_EDGES))
READING_NOTES = ("dropped_missing", "engine")  # what the command adds to the document
FIXED_P = {"gender": 0.9, "age": 0.8, "disease": 0.7}
FIXED_P_FLAGS = ["--p", "gender=0.9", "--p", "age=0.8", "--p", "disease=0.7"]


def _cells(document: dict) -> dict[tuple[str, str], dict]:
    return {(c["row"], c["column"]): c for c in document["cells"]}


# ----------------------------------------------------------------------------- audit
def test_audit_gives_the_bounds_and_disclosures_of_spec_7():
    result = distgate.audit(PUBLISHED, tau=5)
    assert result.safe is False and result.plan is None
    cells = _cells(result.to_dict())
    for row, uppers in SPEC_UPPER.items():
        for column, upper in zip(["T1", "T2", "T3", "T4", "T5"], uppers, strict=True):
            cell = cells[(row, column)]
            assert cell["upper"] == upper
            assert cell["lower"] == {("P1", "T1"): 2, ("P1", "T3"): 4}.get((row, column), 0)
            small = row == "P3" or column in ("T2", "T4", "T5")
            assert ("downward" in cell["disclosures"]) == small
            assert ("approximation" in cell["disclosures"]) == small


def test_audit_fix_finds_the_plan_of_the_audit_page_and_the_command_s_document():
    result, document = run_json(
        "audit", PUBLISHED, "--tau", "5", "--types", "downward,approximation", "--fix"
    )
    assert result.exit_code == 1
    audited = distgate.audit(PUBLISHED, tau=5, types=["downward", "approximation"], fix=True)
    assert audited.to_dict() == document
    plan = audited.plan
    assert (plan.merges, plan.minimal, plan.safe_after) == (3, True, True)
    assert plan.merge_rows == [["P2", "P3"]]
    assert plan.merge_columns == [["T1", "T2"], ["T4", "T5"]]


def test_audit_counts_a_table_of_records_as_the_command_does(tmp_path):
    result, document = run_json(
        "audit", SOLDIERS, "-x", "age", "-y", "location", "--bins", BIN_FLAG
    )
    assert result.exit_code == 0  # every cell's bounds span more than tau = 3
    audited = distgate.audit(pd.read_csv(SOLDIERS), **TABLE)
    assert audited.safe is True and audited.to_dict() == document
    values = {(c["row"], c["column"]): c["value"] for c in document["cells"]}
    for i, location in enumerate(LOCATIONS):
        assert [values[(band, location)] for band in AGE_BANDS] == COUNTS[i].tolist()
    assert (audited.reading.engine, audited.reading.engine_reason) == ("arrow", "a table in memory")


def test_audit_takes_no_key_column_or_baseline_and_checks_its_options():
    with pytest.raises(TypeError, match=r"audit\(\) got an unexpected keyword argument 'baseline'"):
        distgate.audit(PUBLISHED, baseline="baseline.csv")
    with pytest.raises(InputError, match=r"^--tau must be a positive number; got -1\.$"):
        distgate.audit(PUBLISHED, tau=-1)
    with pytest.raises(InputError, match="Unknown disclosure type 'up' in --types"):
        distgate.audit(PUBLISHED, types="up")
    with pytest.raises(InputError, match="^--bins applies to a table of records"):
        distgate.audit(PUBLISHED, bins={"age": [1]})


# ----------------------------------------------------------------------- assess --fix
@pytest.mark.slow
def test_assess_fix_repairs_and_writes_the_release_the_command_writes(tmp_path):
    flags = ["--config", str(SETTINGS), "--alpha", "0.05", "--fix", "--fix-by", "suppress"]
    result, document = run_json("assess", SOLDIERS, *flags, "-o", str(tmp_path / "cli"))
    assert result.exit_code == 0
    assessed = distgate.assess(
        SOLDIERS,
        config=SETTINGS,
        alpha=0.05,
        fix=True,
        fix_by="suppress",
        output=tmp_path / "api",
    )
    repair = assessed.repair
    assert assessed.safe is False and repair.found and repair.verified
    assert [p.split("/")[-1] for p in repair.written] == [
        "release.csv",
        "baseline.csv",
        "plan.json",
    ]
    fix = assessed.to_dict()["fix"]
    assert (fix["strategy"], fix["withheld"], fix["online"]["released"]) == ("suppress", 2129, 7799)
    assert fix["after"]["safe"] is True and fix["after"]["released"] == 10000 - 2129
    expected = {k: v for k, v in document.items() if k not in READING_NOTES}
    assert assessed.to_dict() == expected
    for name in ("release.csv", "baseline.csv"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


@pytest.mark.parametrize(
    "options, sentence",
    [
        ({"fix_by": "merge"}, "--fix-by goes with --fix (it sets how the release is repaired)."),
        (
            {"output": "out"},
            "-o DIR goes with --fix (it names the folder of the repaired release).",
        ),
        (
            {"fix": True, "fix_by": "merge", "max_suppressed": 0.1},
            "--max-suppressed does not apply to --fix-by merge, which withholds no record.",
        ),
        (
            {"fix": True, "max_suppressed": 1.5},
            "--max-suppressed is a share of the records, from 0 to 1, not 1.5.",
        ),
        (
            {"metric": "kld", "ground": "equal"},
            "--ground does not apply to the chosen metrics (kld): it sets tclose's ground "
            "distance.",
        ),
    ],
)
def test_assess_refuses_an_option_that_does_not_apply_with_the_command_s_sentence(
    options, sentence
):
    with pytest.raises(InputError) as caught:
        distgate.assess(SOLDIERS, config=SETTINGS, **options)
    assert str(caught.value) == sentence


# ------------------------------------------------------------------------- randomize
def test_randomize_with_fixed_probabilities_writes_what_the_command_writes(tmp_path):
    qi = ["gender", "age"]
    result, document = run_json(
        "randomize", PATIENTS, "--qi", "gender,age", "--sensitive", "disease", *FIXED_P_FLAGS,
        "-o", str(tmp_path / "cli.csv"), "--top", "2",
    )  # fmt: skip
    assert result.exit_code == 0
    randomized = distgate.randomize(PATIENTS, qi, "disease", p=FIXED_P, output=tmp_path / "api.csv")
    # JSON has no infinity: the command writes the KL distance to a zero cell as "inf"
    assert document["utility"]["kl"] == "inf"
    document["utility"]["kl"] = float("inf")
    assert randomized.to_dict(2) == document
    assert randomized.p == FIXED_P and round(randomized.max_risk, 4) == 0.2170
    assert (tmp_path / "api.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    estimate = distgate.randomize(
        tmp_path / "api.csv", "gender,age", "disease", p=["gender=0.9", "age=0.8", "disease=0.7"],
        reconstruct=True, output=tmp_path / "estimate.csv",
    )  # fmt: skip
    assert round(estimate.max_risk, 4) == 0.2867
    lines = (tmp_path / "estimate.csv").read_text().splitlines()
    assert lines[:2] == ["gender,age,disease,probability", "F,20-39,flu,0.12197559060737992"]


def test_randomize_checks_its_options_with_the_command_s_sentences():
    with pytest.raises(InputError, match=r"^Give either --l-diversity or --tau, not both\.$"):
        distgate.randomize(PATIENTS, "gender", "disease", tau=0.5, l_diversity=2)
    with pytest.raises(InputError, match=r"^Give --tau, --l-diversity or --p ATTR=P"):
        distgate.randomize(PATIENTS, "gender", "disease")
    with pytest.raises(InputError, match="^--mix is the mixing weight of a --matrix"):
        distgate.randomize(PATIENTS, "gender", "disease", tau=0.5, mix={"disease": 0.5})
    with pytest.raises(TypeError, match=r"its table keywords are: bins, delimiter, encoding\)"):
        distgate.randomize(PATIENTS, "gender", "disease", tau=0.5, missing="drop")


# ------------------------------------------------------------------------- calibrate
@pytest.mark.slow
def test_calibrate_measures_the_levels_of_the_calibrate_page():
    calibration = distgate.calibrate(
        SOLDIERS, config=SETTINGS, metric="kld,cst", sizes=[20, 100, 1000], alpha=0.05
    )
    measured = {(level.metric, level.size): round(level.blocked, 4) for level in calibration.levels}
    assert measured == {
        ("kld", 20): 0.0473,
        ("kld", 100): 0.0548,
        ("kld", 1000): 0.0592,
        ("cst", 20): 0.0405,
        ("cst", 100): 0.0555,
        ("cst", 1000): 0.0553,
    }
    assert calibration.within is True
    assert calibration.reading.settings["attributes"] == ["age"]


def test_calibrate_gives_the_document_of_calibrate_json():
    flags = ["-m", "kld", "--sizes", "20,100", "--releases", "200", "-a", "0.05"]
    result, document = run_json("calibrate", SOLDIERS, *flags, "-x", "age", "-y", "location")
    assert result.exit_code == 0
    calibration = distgate.calibrate(
        SOLDIERS, attributes="age", targets="location", metric=["kld"], sizes="20,100",
        releases=200, alpha=[0.05],
    )  # fmt: skip
    assert calibration.to_dict() == document
    with pytest.raises(InputError, match=r"^--sizes must be whole numbers separated by commas"):
        distgate.calibrate(SOLDIERS, **TABLE, sizes="20,x")


# ---------------------------------------------------------------------- the TableSpec
def test_one_spec_serves_several_calls_and_keywords_beside_it_replace_its_fields():
    spec = TableSpec(SOLDIERS, **TABLE)
    assert distgate.baseline(spec).outliers == ["L2"]
    by_spec = distgate.assess(spec, metric="kld", alpha=0.05)
    assert (
        by_spec.to_dict() == distgate.assess(SOLDIERS, **TABLE, metric="kld", alpha=0.05).to_dict()
    )
    coarser = distgate.baseline(spec, bins={"age": [30]})
    assert coarser.to_pandas("baseline").value.tolist() == ["<30", ">=30"]
    assert spec.bins == {"age": AGE_EDGES} and coarser.reading.settings == {}


def test_an_unknown_keyword_is_a_type_error_naming_the_table_keywords():
    with pytest.raises(TypeError) as caught:
        distgate.assess(SOLDIERS, atributes="age")
    assert str(caught.value) == (
        "assess() got an unexpected keyword argument 'atributes' (its table keywords are: "
        + ", ".join(TABLE_KEYWORDS)
        + ")"
    )


def test_how_the_table_was_read_comes_back_as_data():
    gaps = pd.DataFrame({"age": [20, None, 35, 50], "location": ["L1", "L2", "L2", "L1"]})
    profile = distgate.baseline(gaps, attributes="age", targets="location", missing="drop")
    assert profile.reading.dropped == 1 and profile.reading.engine == "arrow"
    assert profile.reading.notes() == ["left out 1 records with a missing value (--missing drop)."]
    assert profile.reading.to_dict() == {"dropped_missing": 1, "engine": "arrow"}


def test_the_table_options_are_declared_once_for_the_api_the_cli_and_the_settings_file():
    # every table keyword but the settings file itself is a key of the settings file
    settings_keys = {FLAGS[name].setting or name for name in TABLE_KEYWORDS if name in FLAGS}
    assert settings_keys - {"config"} <= KNOWN_KEYS and "view" in settings_keys
    assert [f.name for f in dataclasses.fields(TableSpec) if f.name in FLAGS] == list(FLAGS)
    # the commands' table options are the spec's fields, by their flags
    from distgate.cli.assess import assess_command

    parameters = inspect.signature(assess_command).parameters
    for name, flag in FLAGS.items():
        option = parameters[flag.parameter or name].annotation.__metadata__[0]
        assert (option.help, option.metavar) == (flag.help, flag.metavar)
