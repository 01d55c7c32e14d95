"""The Python functions of the gate's commands (``distgate.replay``, ``open_gate`` and
``gate_opener``, ``simulate``, and the state's ``inspect_state``, ``verify_state``,
``export_state``): each gives its command's document, and the gate's options are declared
once, on ``GateSettings``, for the API, the command line, the settings file and the state
file."""

from __future__ import annotations

import inspect

import pytest

import distgate
from distgate.api.workflows import SIMULATE_KEYWORDS
from distgate.data.config import KNOWN_KEYS
from distgate.data.spec import TABLE_KEYWORDS
from distgate.errors import InputError
from distgate.gate.settings import GATE_KEYWORDS, GATE_OPTIONS, GateSettings, gate_settings
from distgate.state.records import gate_record, settings_of_record
from tests.cli_helpers import run, run_json
from tests.conftest import SAMPLE
from tests.reference import AGE_EDGES

SOLDIERS = str(SAMPLE / "soldiers.csv")
REQUESTS = str(SAMPLE / "requests.csv")
TABLE = {"attributes": "age", "targets": "location", "id": "id", "bins": {"age": AGE_EDGES}}
TABLE_FLAGS = ["-x", "age", "-y", "location", "--id", "id", "--bins"]
TABLE_FLAGS.append("age=" + ",".join(map(str, AGE_EDGES)))


# ------------------------------------------------------------------- declared once
def test_the_gate_options_are_declared_once_for_the_api_the_cli_and_the_settings_file():
    from distgate.cli.assess import assess_command
    from distgate.cli.replay import replay_command
    from distgate.cli.serve import serve_command
    from distgate.cli.simulate import simulate_command

    read_from_the_file = {k for k, option in GATE_OPTIONS.items() if option.setting}
    assert read_from_the_file == {"metric", "alpha", "critical", "seed"} <= KNOWN_KEYS
    for command in (replay_command, serve_command):
        parameters = inspect.signature(command).parameters
        for keyword, option in GATE_OPTIONS.items():
            info = parameters[keyword].annotation.__metadata__[0]
            flags = (info.default, *info.param_decls)  # (Typer takes the first for a default)
            assert (flags, info.metavar, info.help) == (option.names, option.metavar, option.help)
    offered = set(inspect.signature(simulate_command).parameters) & set(GATE_KEYWORDS)
    assert offered == set(SIMULATE_KEYWORDS) | {"metric", "alpha"}  # its own lists
    alpha = inspect.signature(assess_command).parameters["alpha"].annotation.__metadata__[0]
    assert alpha.help == GATE_OPTIONS["alpha"].help


def test_each_gate_keyword_is_taken_over_the_settings_file_over_the_default():
    assert gate_settings({}) == GateSettings()
    settings = {"metric": "mis", "alpha": 0.05, "seed": 3, "critical": "asymptotic"}
    chosen = gate_settings({"metric": ["kld,cst"], "alpha": None, "no_queue": True}, settings)
    assert (chosen.metrics, chosen.alpha, chosen.seed, chosen.critical) == (
        ["kld", "cst"],
        0.05,
        3,
        "asymptotic",
    )
    assert (chosen.queue, chosen.grace, chosen.draws) == (False, "none", 10_000)
    assert gate_settings({"metric": [], "no_queue": False}, settings).metrics == ["mis"]
    assert gate_settings({"share": 0.5}).indistinguishable is True  # the rule's share
    with pytest.raises(InputError, match="Unknown metric 'nope'"):
        gate_settings({"metric": "kld,nope"})


def test_a_state_records_the_gate_settings_and_reads_them_back():
    plain = gate_record(GateSettings())
    assert plain == {
        "metric": "kld",
        "alpha": 0.2,
        "critical": "auto",
        "seed": 0,
        "draws": 10_000,
        "threshold": None,
        "queue": True,
        "grace": "none",
    }
    for settings in (
        GateSettings(),
        GateSettings(["kld", "cst"], 0.05, "asymptotic", 3, 500, None, False, "releases:5"),
        GateSettings(["dleak"], threshold=0.3),
        GateSettings(share=0.4),
    ):
        assert settings_of_record(gate_record(settings)) == settings
    assert gate_record(GateSettings(share=0.4))["indistinguishable"] == {"share": 0.4}
    assert settings_of_record({"attributes": ["age"], "records": 10}) == GateSettings()


def test_an_unknown_keyword_names_the_table_and_the_gate_keywords():
    with pytest.raises(TypeError) as caught:
        distgate.replay(SOLDIERS, REQUESTS, **TABLE, alpah=0.1)
    assert str(caught.value) == (
        "replay() got an unexpected keyword argument 'alpah' (its table keywords are: "
        + ", ".join(TABLE_KEYWORDS)
        + "; its gate keywords are: "
        + ", ".join(GATE_KEYWORDS)
        + ")"
    )
    with pytest.raises(TypeError, match="'threshold'.*its gate keywords are: critical, seed"):
        distgate.simulate(SOLDIERS, **TABLE, threshold=0.1)


def test_gate_opener_checks_the_options_at_once_and_reads_the_table_when_called(tmp_path):
    state = tmp_path / "gate.db"
    with pytest.raises(InputError, match="alpha"):
        distgate.gate_opener(tmp_path / "missing.csv", state, **TABLE, alpha=2)
    opener = distgate.gate_opener(tmp_path / "missing.csv", state, **TABLE)
    with pytest.raises(InputError, match="missing.csv"):
        opener()
    with distgate.gate_opener(SOLDIERS, state, **TABLE, metric="cst")() as gate:
        assert gate.settings.metrics == ["cst"] and gate.reading.engine == "arrow"
        assert gate.decide(["S05173"])[0].decision == "released"


# ---------------------------------------------------------------------- simulate
def test_simulate_gives_the_document_of_simulate_json():
    small = ["--sequences", "2", "--requests", "300", "--draws", "500", "--workers", "1"]
    result, document = run_json("simulate", SOLDIERS, *TABLE_FLAGS, "-m", "kld,cst", *small)
    assert result.exit_code == 0, result.output
    simulated = distgate.simulate(
        SOLDIERS, **TABLE, metric="kld,cst", sequences=2, requests=300, draws=500, workers=1
    )
    assert {**simulated.to_dict(), "engine": simulated.reading.engine} == document
    assert simulated.metrics == ["kld", "cst"] and simulated.alphas == [0.2, 0.05]
    assert simulated.fit_sample is None and simulated.evolutions == []
    kept = distgate.simulate(
        SOLDIERS, **TABLE, metric="kld", alpha=0.2, sequences=1, requests=300, draws=500,
        workers=1, keep_evolution=True,
    )  # fmt: skip
    sample, degrees = kept.fit_sample
    assert len(sample) == 500 and degrees == 9 * 5  # (10 values - 1) x 5 targets
    assert [(e.metric, e.alpha) for e in kept.evolutions] == [("kld", 0.2)]


# ---------------------------------------------------------------------- the state
def test_the_state_functions_give_what_the_state_commands_show(tmp_path):
    state = tmp_path / "gate.db"
    distgate.replay(SOLDIERS, REQUESTS, **TABLE, state=state, metric="cst")
    result, shown = run_json("state", "inspect", state)
    assert result.exit_code == 0, result.output
    summary = distgate.inspect_state(state)
    assert summary.to_dict() == shown and summary.requests == 10040
    result, shown = run_json("state", "verify", state, SOLDIERS)
    assert result.exit_code == 0, result.output
    verification = distgate.verify_state(state, SOLDIERS)
    assert verification.to_dict() == shown and verification.verified
    assert verification.reading.settings == {}  # no settings file named
    assert distgate.verify_state(state).reading is None
    assert distgate.export_state(state, tmp_path / "api.csv") == 10040
    result = run("state", "export", state, "-o", tmp_path / "cli.csv")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "api.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    with pytest.raises(
        TypeError, match="verify_state\\(\\) got an unexpected keyword argument 'id'"
    ):
        distgate.verify_state(state, SOLDIERS, id="id")


def test_verify_reads_a_state_of_the_indistinguishable_rule_under_its_rule(tmp_path):
    """The rule is among the settings a state records: a new gate deciding the stored
    requests on the table runs under it too, and makes the same decisions."""
    state = tmp_path / "gate.db"
    log = tmp_path / "log.csv"
    log.write_text("".join(open(REQUESTS).readlines()[:3001]))
    distgate.replay(SOLDIERS, log, **TABLE, state=state, indistinguishable=True)
    checks = {c.name: c.status for c in distgate.verify_state(state, SOLDIERS).checks}
    assert [checks[name] for name in ("table", "keys", "decisions from the table")] == ["ok"] * 3
