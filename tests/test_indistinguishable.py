"""The rule that keeps the targets alike (distgate.gate.indistinguishable): its plan, that
every release still passes the ordinary test and fits the common share, what an observer
learns under it on a table of many targets, and the rule in replay, its state and the
command line."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distgate
from distgate.errors import InputError
from distgate.gate import Gate
from distgate.gate.decisions import DUPLICATE, QUEUED
from distgate.gate.indistinguishable import (
    PER,
    CommonRelease,
    plan_common_release,
    size_cohorts,
)
from distgate.observer.attacks import RELEASE_ATTACKS, TIMING_ATTACKS
from distgate.stats.critical import CriticalValues
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

UNITS = dict(attributes="grade", targets="unit", id="id")


def _table(rng, n_targets=6, n_values=5, records=600, tilted=1):
    p = rng.dirichlet(np.full(n_values, 4.0))
    targets = rng.integers(0, n_targets, records)
    values = rng.choice(n_values, records, p=p)
    shifted = targets < tilted
    values[shifted] = rng.choice(n_values, shifted.sum(), p=np.roll(p, 2))
    counts = np.zeros((n_targets, n_values), dtype=np.int64)
    np.add.at(counts, (targets, values), 1)
    baseline = counts.sum(axis=0) / records
    return targets, values, counts, baseline


def test_the_plan_is_a_distribution_every_target_can_supply_at_the_share():
    rng = np.random.default_rng(3)
    _, _, counts, p = _table(rng, n_targets=8, n_values=6, records=4000, tilted=2)
    sizes = counts.sum(axis=1)
    for gain, held_back in ((math.inf, ()), (1.1, (0, 1))):
        # the two tilted targets, far from the others, are held back unless told not to
        plan = plan_common_release(counts, p, 0.2, hold_gain=gain)
        (cohort,) = plan.cohorts  # eight targets of about 500: one cohort
        assert plan.held_back == held_back
        assert cohort.members == tuple(y for y in range(8) if y not in held_back)
        r = np.array(cohort.release)
        assert r.sum() == pytest.approx(1.0) and (r >= 0).all()
        # every member holds s n_y r(x) records of every value: it can release its share
        members = list(cohort.members)
        assert (cohort.share * sizes[members, None] * r <= counts[members] + 1e-9).all()
        assert 0 < cohort.share < 1 and cohort.per_mille % 10 == 0  # a hundredth, rounded
    assert plan.share == round(cohort.share * sizes[members].sum() / sizes.sum(), 3)


def test_identical_targets_release_the_baseline_itself_at_nearly_their_whole_size():
    counts = np.tile([10, 30, 40, 20], (5, 1))
    plan = plan_common_release(counts, counts[0] / 100, 0.2)
    assert plan.cohorts[0].release == pytest.approx((0.1, 0.3, 0.4, 0.2))
    assert plan.share == 0.95  # the margin below the largest share, 1


def test_a_share_given_is_kept_and_a_target_that_cannot_meet_it_is_held_back():
    counts = np.array([[50, 50], [90, 10]])
    plan = plan_common_release(counts, np.array([0.7, 0.3]), 0.2, share=0.4)
    (cohort,) = plan.cohorts
    assert cohort.per_mille == 400 and cohort.release == pytest.approx((0.75, 0.25))
    # at 0.7 the two hold only 0.5 + 0.1 in common: one is held back, the other goes on
    plan = plan_common_release(counts, np.array([0.7, 0.3]), 0.2, share=0.7)
    assert plan.held_back == (0,) and plan.cohorts[0].members == (1,)
    assert plan.cohort_of(0) is None and plan.cohort_of(1).per_mille == 700
    with pytest.raises(InputError, match=r"in \(0, 1\]"):
        plan_common_release(counts, np.array([0.7, 0.3]), 0.2, share=1.5)


def test_a_target_without_a_value_is_held_back_instead_of_stopping_every_target():
    """Ten alike targets and one without the first value: one common distribution of all
    eleven holds none of it, and its distance from the baseline lets them release little;
    the target without it is held back and the ten release most of their records."""
    counts = np.tile([40, 120, 240, 100], (11, 1))
    counts[10] = [0, 130, 260, 110]
    p = counts.sum(axis=0) / counts.sum()
    everyone = plan_common_release(counts, p, 0.2, hold_gain=math.inf)
    assert everyone.held_back == () and everyone.share < 0.2
    plan = plan_common_release(counts, p, 0.2)
    assert plan.held_back == (10,) and plan.share >= 0.85
    assert plan.cohorts[0].release[0] > 0


def test_cohorts_follow_the_sizes_alone():
    sizes = [10, 12, 15, 20, 30, 45, 100, 110, 130, 150, 170, 900]
    cohorts = [c.tolist() for c in size_cohorts(sizes, 4.0)]
    # 10..30 (up to 40), then 45..170 (up to 180); 900 alone joins the cohort before it
    assert cohorts == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9, 10, 11]]
    assert [c.tolist() for c in size_cohorts(sizes, math.inf)] == [list(range(12))]


def test_budgets_are_exact_integer_arithmetic():
    plan = CommonRelease(620, (1.0,))
    assert [plan.budget(q) for q in (0, 1, 49, 50, 500)] == [0, 0, 30, 31, 310]
    assert plan.share == 620 / PER


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["kld", "mis", "cst", "exposure"]),
    st.sampled_from(["none", "releases:5"]),
)
def test_every_release_passes_the_ordinary_test_and_fits_the_share(seed, metric, grace):
    """The rule only ever releases a record that the ordinary gate's test passes at that
    moment (checked by an ordinary gate fed the same releases in the same order), of a
    value the common distribution holds, while its target's share allows."""
    rng = np.random.default_rng(seed)
    targets, values, counts, p = _table(rng)
    critical = CriticalValues(p, counts.sum(axis=1), mode="auto", draws=200, seed=1)
    plan = plan_common_release(counts, p, 0.2)
    if seed % 2:  # a target held back: nothing of it is ever released
        plan = dataclasses.replace(plan, held_back=(5,), cohorts=tuple(
            dataclasses.replace(c, members=tuple(y for y in c.members if y != 5))
            for c in plan.cohorts
        ))  # fmt: skip
    options = dict(grace=grace)
    gate = Gate(targets, values, 6, 5, [metric], 0.2, critical, rule=plan, **options)
    order = np.concatenate([rng.permutation(len(targets)), rng.integers(-1, len(targets), 50)])
    first_asked: dict[int, int] = {}
    for j, record in enumerate(order.tolist()):
        first_asked.setdefault(record, j)
    plain = Gate(targets, values, 6, 5, [metric], 0.2, critical, **options)
    release = gate.release_state.release

    def checked_release(record: int, at: int) -> None:
        y, x = int(targets[record]), int(values[record])
        asked = sum(1 for r, j in first_asked.items() if r >= 0 and j <= at and targets[r] == y)
        cohort = plan.cohort_of(y)
        assert cohort is not None and cohort.release[x] > 0
        assert first_asked[record] < at  # never the record of the request that releases
        plain_state = plain.release_state
        assert plain_state.cell_safe(y * 5 + x), (at, y, x)
        assert plain_state.sums[0].n[y] + 1 <= cohort.budget(asked), (at, y)
        plain_state.release(record, at)
        release(record, at)

    gate.release_state.release = checked_release
    result = gate.run(order.astype(np.int64))
    np.testing.assert_array_equal(plain.counts, gate.counts)
    if metric != "exposure" or grace != "none":  # (exposure alone needs a grace to start)
        assert gate.counts.sum() > 0
    # every answer on arrival is queued (or duplicate): it tells nothing of the record
    assert set(np.unique(result.decision[order >= 0]).tolist()) <= {QUEUED, DUPLICATE}


@pytest.fixture(scope="module")
def under_the_rule():
    return distgate_simulation(indistinguishable=True, sequences=8)


@pytest.mark.slow
def test_on_many_alike_targets_the_released_records_do_not_find_the_deviating_ones(
    under_the_rule,
):
    """units.csv: 20 units of 500, three tilted toward high grades. The ordinary gate lets
    every attack on the released records find them (AUC 1 at every alpha that releases
    anything); under the rule the best of them stays near chance over the orders, read
    either way up, while more than half of the records are released."""
    rows = [r for r in under_the_rule.observer.rows if r.attack in RELEASE_ATTACKS]
    best = max(rows, key=lambda row: row.two_sided)
    assert best.two_sided <= 0.65, best
    assert rows[0].released_share >= 0.5
    ordinary = distgate_simulation(indistinguishable=False, sequences=3)
    assert max(row.two_sided for row in ordinary.observer.rows) > 0.95


@pytest.mark.slow
def test_on_many_alike_targets_the_answers_do_not_find_the_deviating_ones(under_the_rule):
    """Every request is answered queued on arrival, so the share answered queued is 1 for
    every unit (AUC 0.5 exactly, where it read 0.87 when a record could leave on its own
    request); a unit's records leave as its own later requests come, and the delays stay
    near chance."""
    rows = {r.attack: r for r in under_the_rule.observer.rows if r.attack in TIMING_ATTACKS}
    assert rows["queued-share"].two_sided == 0.5 and rows["queued-share"].auc_sd == 0.0
    assert rows["release-delay"].two_sided <= 0.65, rows["release-delay"]


def distgate_simulation(*, indistinguishable: bool, sequences: int):
    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.workflows.simulate import simulate

    options = TableOptions(str(SAMPLE / "units.csv"), ("grade",), ("unit",), id_column="id")
    inputs = load_inputs(options)
    table = inputs.table
    return simulate(
        table.target_codes,
        table.value_codes,
        table.target_labels,
        inputs.critical_values("auto"),
        metrics=["kld"],
        alphas=[0.2],
        sequences=sequences,
        attack=True,
        indistinguishable=indistinguishable,
        workers=1,
    )


def test_replay_under_the_rule_keeps_it_in_its_state(tmp_path):
    """The rule is recorded in the state: a replay that continues it under the rule goes
    on where it stopped, deciding as one replay of the whole log; one without the rule,
    or with another share, is refused."""
    table = SAMPLE / "units.csv"
    keys = [line.split(",")[0] for line in table.read_text().splitlines()[1:]]
    order = np.random.default_rng(5).permutation(len(keys))[:3000]
    first, rest, whole = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "all.csv"
    first.write_text("id\n" + "".join(f"{keys[i]}\n" for i in order[:1800]))
    rest.write_text("id\n" + "".join(f"{keys[i]}\n" for i in order[1800:]))
    whole.write_text("id\n" + "".join(f"{keys[i]}\n" for i in order))
    state = tmp_path / "gate.db"
    alone = distgate.replay(table, whole, **UNITS, indistinguishable=True).to_arrow()
    distgate.replay(table, first, **UNITS, indistinguishable=True, state=state)
    with pytest.raises(InputError, match="indistinguishable"):
        distgate.replay(table, rest, **UNITS, state=state)
    with pytest.raises(InputError, match="indistinguishable"):
        distgate.replay(table, rest, **UNITS, share=0.5, state=state)
    continued = distgate.replay(table, rest, **UNITS, indistinguishable=True, state=state)
    assert continued.first_request == 1800
    own = continued.to_arrow().filter(continued.to_arrow().column("request").to_numpy() >= 1800)
    for column in ("decision", "released_at"):
        assert own.column(column).to_pylist() == alone.column(column).to_pylist()[1800:]
    assert set(alone.column("decision").to_pylist()) == {"queued"}  # on arrival, always
    assert (alone.column("released_at").to_numpy() >= 0).sum() > 0


def test_the_rule_on_the_command_line(tmp_path):
    units = str(SAMPLE / "units.csv")
    flags = ("-x", "grade", "-y", "unit", "--id", "id")
    assert_bad_input(
        run("replay", units, units, *flags, "--indistinguishable", "--no-queue"), "--no-queue"
    )
    assert_bad_input(run("replay", units, units, *flags, "--share", "1.5"), "(0, 1]")
    result = run(
        "simulate", units, *flags, "-m", "kld", "--alpha", "0.2", "--sequences", "2",
        "--indistinguishable", "--attack", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    import json

    document = json.loads(result.stdout)
    assert document["rule"] == "indistinguishable" and document["shares"] == {"0.2": 0.62}
    assert document["held_back"] == {"0.2": []}  # twenty units of one size: none
    assert {row["rule"] for row in document["attacks"]} == {"indistinguishable"}


def _table_with_a_target_lacking_a_value(folder) -> str:
    """Ten units of 500 soldiers alike and U11, which holds no soldier of grade G1 (the
    plan's table of test_a_target_without_a_value_is_held_back_instead_of_stopping_every_
    target), as a CSV file in ``folder``; its records in table order are its request log."""
    counts = np.tile([40, 120, 240, 100], (11, 1))
    counts[10] = [0, 130, 260, 110]
    lines = ["id,unit,grade"]
    for y, row in enumerate(counts):
        for x, n in enumerate(row):
            lines += [f"r{y:02d}{x}{i:03d},U{y + 1:02d},G{x + 1}" for i in range(n)]
    path = folder / "units.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_every_front_end_names_the_target_the_rule_holds_back(tmp_path):
    import json

    table = _table_with_a_target_lacking_a_value(tmp_path)
    flags = ("-x", "grade", "-y", "unit", "--id", "id", "-m", "kld")
    result = run("replay", table, table, *flags, "--indistinguishable", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["held_back"] == ["U11"]
    rows = {row["target"]: row for row in document["targets"]}
    assert rows["U11"]["still_queued"] == 500 and rows["U11"]["percent_released"] == 0
    assert min(rows[f"U{y:02d}"]["percent_released"] for y in range(1, 11)) >= 80
    shown = run("replay", table, table, *flags, "--indistinguishable")
    assert "held back by the indistinguishable rule (their records stay queued): U11" in (
        shown.stdout
    )
    ordinary = json.loads(run("replay", table, table, *flags, "--json").stdout)
    assert "held_back" not in ordinary
    # the API's results: replay's, and the summary an operator of serve reads
    api = dict(attributes="grade", targets="unit", id="id", metric="kld")
    assert distgate.replay(table, table, **api, indistinguishable=True).held_back == ["U11"]
    assert distgate.replay(table, table, **api).held_back == []
    with distgate.open_gate(table, tmp_path / "gate.db", **api, indistinguishable=True) as gate:
        gate.decide(["r101000", "r000000"])
        summary = gate.summary()
    assert summary.held_back == ("U11",) and summary.to_dict()["held_back"] == ["U11"]


def test_serve_names_the_held_back_target_to_its_operator(tmp_path):
    import httpx

    from tests.serve_helpers import OPERATOR, LiveServer, write_tokens

    table = _table_with_a_target_lacking_a_value(tmp_path)
    flags = ("-x", "grade", "-y", "unit", "--id", "id", "-m", "kld", "--indistinguishable")
    with LiveServer(table, str(tmp_path / "gate.db"), *flags, *write_tokens(tmp_path)) as live:
        url = live.wait_ready()
        assert (
            "distgate: the indistinguishable rule holds back U11: their records stay queued"
            in live.lines
        )
        answer = httpx.get(
            f"{url}/v1/summary", headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=60
        )
        assert answer.status_code == 200 and answer.json()["held_back"] == ["U11"]
        assert live.stop() == 0
