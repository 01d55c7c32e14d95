"""Reports for CI systems: the JUnit XML test report (read by junitparser, a real JUnit
consumer, and checked against the structure JUnit's schema requires), the markdown job
summary (written when GITHUB_STEP_SUMMARY is set, and not otherwise) and one csv file per
table (--csv-dir). None of them changes the exit code."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest

from distgate.report.junit import to_junit
from distgate.report.model import Report
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
CONFIG = ["--config", str(SAMPLE / "distgate.toml")]
BASELINE = ["--baseline", str(SAMPLE / "baseline.csv")]
SAFE_RELEASE = str(SAMPLE / "releases" / "2026-q1.csv")
UNSAFE_RELEASE = str(SAMPLE / "releases" / "2026-q2.csv")  # L2, the headquarters, stands out

# What JUnit's XML schema (Ant's and Surefire's format, as Jenkins' junit-10.xsd writes it
# down) requires of each element: its required attributes and the children it allows.
REQUIRED = {
    "testsuites": (set(), {"testsuite"}),
    "testsuite": (
        {"name", "tests", "failures", "errors"},
        {"testsuite", "properties", "testcase", "system-out", "system-err"},
    ),
    "properties": (set(), {"property"}),
    "property": ({"name", "value"}, set()),
    "testcase": ({"name"}, {"skipped", "error", "failure", "system-out", "system-err"}),
    "failure": (set(), set()),
    "system-out": (set(), set()),
}
NUMBERS = ("tests", "failures", "errors", "skipped")


def check_structure(text: str) -> ET.Element:
    """Parse the document and check it against the schema's structure: required
    attributes present, only allowed children, counts that are whole numbers and add up."""
    root = ET.fromstring(text.encode())
    assert root.tag == "testsuites"
    for element in root.iter():
        required, children = REQUIRED[element.tag]
        assert required <= set(element.attrib), (element.tag, element.attrib)
        assert {child.tag for child in element} <= children, element.tag
        for name in NUMBERS:
            if name in element.attrib:
                assert element.attrib[name].isdigit(), (element.tag, name)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
    suites = root.findall("testsuite")
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    assert int(root.get("failures")) == sum(int(s.get("failures")) for s in suites)
    return root


def junit_cases(path: Path) -> dict[tuple[str, str], junitparser.TestCase]:
    """Every test case as junitparser reads the file: {(suite, case): case}."""
    document = junitparser.JUnitXml.fromfile(str(path))
    return {(suite.name, case.name): case for suite in document for case in suite}


def failures(case: junitparser.TestCase) -> list[junitparser.Failure]:
    return [r for r in case.result if isinstance(r, junitparser.Failure)]


def test_assess_junit_has_one_failure_per_blocked_target(tmp_path):
    xml = tmp_path / "assess.xml"
    args = ["assess", SOLDIERS, *CONFIG, "--metric", "kld,mis,cst", "--alpha", "0.05"]
    result = run(*args, "--junit", str(xml))
    assert result.exit_code == 1
    check_structure(xml.read_text())
    cases = junit_cases(xml)
    assert sorted(cases) == sorted(
        [(f"{m} at alpha 0.05", t) for m in ("kld", "cst") for t in ("L1", "L2", "L3", "L4", "L5")]
        + [("mis at alpha 0.05", "whole release")]
    )
    assert all(len(failures(case)) == 1 for case in cases.values())  # every test blocks
    # the message gives the statistic, the critical value and alpha (SPEC 9's figures)
    l2 = failures(cases[("kld at alpha 0.05", "L2")])[0]
    assert l2.message == (
        "L2: statistic 0.358836, critical value 0.00944257 (alpha 0.05, chi-square (corrected)), "
        "1299 records"
    )
    assert l2.type == "blocked"
    cst = failures(cases[("cst at alpha 0.05", "L2")])[0].message
    assert "statistic 878.202, critical value 17.5113" in cst
    mis = failures(cases[("mis at alpha 0.05", "whole release")])[0].message
    assert mis == (
        "I = 0.0632852 for the release, critical value 0.00450562 "
        "(alpha 0.05, chi-square (corrected))"
    )
    assert cases[("kld at alpha 0.05", "L1")].classname == "distgate.assess.kld"


def test_a_safe_release_passes_every_case_and_an_unsafe_one_fails_only_l2(tmp_path):
    safe, unsafe = tmp_path / "safe.xml", tmp_path / "unsafe.xml"
    args = [*CONFIG, *BASELINE, "--metric", "kld,cst"]
    assert run("assess", SAFE_RELEASE, *args, "--junit", str(safe)).exit_code == 0
    assert run("assess", UNSAFE_RELEASE, *args, "--junit", str(unsafe)).exit_code == 1
    check_structure(safe.read_text())
    passed = junit_cases(safe)
    assert len(passed) == 10 and all(case.is_passed for case in passed.values())
    assert "statistic 0.00333693" in passed[("kld at alpha 0.2", "L1")].system_out
    blocked = {key for key, case in junit_cases(unsafe).items() if not case.is_passed}
    assert blocked == {("kld at alpha 0.2", "L2"), ("cst at alpha 0.2", "L2")}


@pytest.mark.parametrize(
    "options, blocked",
    [
        (["kanon", "kanon=1500"], {"L2"}),  # 1299 soldiers in L2: a class smaller than k
        # the headquarters' ages are the most spread: L2 alone has an entropy l over 7
        (["ldiv", "ldiv=7", "--diversity", "entropy"], {"L1", "L3", "L4", "L5"}),
        (["tclose", "tclose=0.05"], {"L2"}),
    ],
)
def test_classic_models_fail_their_failing_classes(options, blocked, tmp_path):
    xml = tmp_path / "classic.xml"
    metric, threshold, *more = options
    args = ["assess", SOLDIERS, *CONFIG, "--metric", metric, "--threshold", threshold, *more]
    result = run(*args, "--format", "junit")
    document = __import__("json").loads(run(*args, "--json").stdout)["metrics"][0]
    assert result.exit_code == 1
    xml.write_text(result.stdout)
    check_structure(result.stdout)
    failed = {name for (_, name), case in junit_cases(xml).items() if not case.is_passed}
    assert failed == set(document["failing"]) == blocked


def test_format_junit_keeps_the_exit_codes():
    safe = run("assess", SAFE_RELEASE, *CONFIG, *BASELINE, "--format", "junit")
    unsafe = run("assess", UNSAFE_RELEASE, *CONFIG, *BASELINE, "--format", "junit")
    bad = run("assess", str(SAMPLE / "missing.csv"), *CONFIG, "--format", "junit")
    assert (safe.exit_code, unsafe.exit_code) == (0, 1)
    assert_bad_input(bad, "missing.csv")
    assert bad.stdout == ""  # no half report
    assert 'failures="0"' in safe.stdout.splitlines()[1]
    assert 'failures="1"' in unsafe.stdout.splitlines()[1]


@pytest.mark.slow
def test_fix_reports_the_repaired_release_so_that_it_agrees_with_the_exit_code(tmp_path):
    xml = tmp_path / "fix.xml"
    result = run("assess", UNSAFE_RELEASE, *CONFIG, *BASELINE, "--fix", "--junit", str(xml))
    assert result.exit_code == 0
    check_structure(xml.read_text())
    cases = junit_cases(xml)
    assert all(case.is_passed for case in cases.values())
    assert ("repair", "repair plan") in cases
    assert all(suite.startswith("repaired release: ") for suite, _ in cases if suite != "repair")


def test_audit_junit_has_one_failure_per_disclosed_cell(tmp_path):
    xml = tmp_path / "audit.xml"
    result = run("audit", str(SAMPLE / "published_counts.csv"), "--tau", "5", "--junit", str(xml))
    assert result.exit_code == 1
    check_structure(xml.read_text())
    cases = junit_cases(xml)
    assert len(cases) == 20  # every cell is unpublished
    failed = {name for (_, name), case in cases.items() if not case.is_passed}
    # SPEC 7: with tau 5, row P3 and columns T2, T4, T5 disclose, and P1/T1, P1/T3 exist
    expected = {f"P3 / T{j}" for j in range(1, 6)}
    expected |= {f"P{i} / T{j}" for i in range(1, 5) for j in (2, 4, 5)}
    expected |= {"P1 / T1", "P1 / T3"}
    assert failed == expected
    message = failures(cases[("audit at tau 5", "P1 / T1")])[0].message
    assert message == "P1 / T1: value 13, bounds [2, 16], tau 5: existence (lower bound 2 > 0)"
    fixed = tmp_path / "fixed.xml"
    args = ["audit", str(SAMPLE / "published_counts.csv"), "--tau", "5", "--fix"]
    assert run(*args, "--junit", str(fixed)).exit_code == 1  # the table as published discloses
    check_structure(fixed.read_text())
    *cells, (plan, case) = junit_cases(fixed).items()
    assert len(cells) == 20 and plan == ("merge plan", "merge plan") and case.is_passed
    assert "4 merges: rows P2 + P3, columns T1 + T2 + T3; T4 + T5" in case.system_out


def test_replay_junit_fails_the_targets_with_blocked_requests(tmp_path):
    log = tmp_path / "requests.csv"
    log.write_text("\n".join((SAMPLE / "requests.csv").read_text().splitlines()[:2001]) + "\n")
    args = ["replay", SOLDIERS, str(log), *CONFIG]
    xml = tmp_path / "replay.xml"
    result = run(*args, "--junit", str(xml))
    assert result.exit_code == 0  # a replay judges requests, not the run
    document = __import__("json").loads(run(*args, "--json").stdout)
    check_structure(xml.read_text())
    cases = junit_cases(xml)
    queued = {t["target"] for t in document["targets"] if t["still_queued"]}
    assert queued and queued != {t["target"] for t in document["targets"]}
    assert {name for (_, name), case in cases.items() if not case.is_passed} == queued
    case = cases[("replay: kld at alpha 0.2", "L2")]
    message = failures(case)[0].message
    l2 = next(t for t in document["targets"] if t["target"] == "L2")
    assert message.startswith(f"L2: {l2['requested']} requested, ")
    assert f"{l2['still_queued']} still queued; last blocked request " in message
    assert "statistic" in message and "critical value" in message and "alpha 0.2" in message


def test_junit_is_refused_where_nothing_is_judged():
    assert_bad_input(run("baseline", SOLDIERS, *CONFIG, "--format", "junit"), "JUnit")
    assert_bad_input(
        run("randomize", str(SAMPLE / "patients.csv"), "--qi", "gender", "--sensitive", "disease",
            "--p", "gender=0.9", "--format", "junit"),
        "JUnit",
    )  # fmt: skip
    assert run("simulate", "--help").stdout.count("--junit") == 0
    assert "--junit FILE.xml" in run("assess", "--help").stdout


def test_labels_with_control_characters_still_make_valid_xml():
    report = Report("assess")
    report.check("kld at alpha 0.2", "L\x1b[31m2\x00", False, "bad \x07 label")
    text = to_junit(report)
    root = check_structure(text)
    case = root.find("testsuite/testcase")
    assert case.get("name") == "L\\x1b[31m2\\x00"
    assert case.find("failure").get("message") == "bad \\x07 label"


def test_job_summary_is_appended_when_github_sets_the_variable(tmp_path, monkeypatch):
    summary = tmp_path / "step_summary.md"
    summary.write_text("# earlier step\n")
    args = ["assess", UNSAFE_RELEASE, *CONFIG, *BASELINE]
    assert run(*args).exit_code == 1
    assert summary.read_text() == "# earlier step\n"  # not set: nothing written
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run(*args, "--format", "json").exit_code == 1
    assert run("assess", SAFE_RELEASE, *CONFIG, *BASELINE).exit_code == 0
    text = summary.read_text()
    assert text.startswith("# earlier step\n### distgate assess ")
    assert text.count("### distgate assess") == 2
    first, second = text.split("### distgate assess")[1:]
    assert "**UNSAFE: releasing 400 records fails at least one metric.**" in first
    assert "- kld at alpha 0.2: L2" in first
    rows = [line for line in first.splitlines() if line.startswith("| kld")]
    assert rows[0].startswith("| kld | 0.2 | L2 | 54 | 0.641989 | 0.163051 | BLOCKED")
    assert "http" not in text  # a link-free table
    assert "**SAFE: releasing 600 records passes every metric.**" in second
    assert "Failed checks" not in second
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")  # an empty variable is unset
    assert run(*args).exit_code == 1
    assert summary.read_text() == text


def test_summary_flag_writes_anywhere_and_bad_input_writes_nothing(tmp_path):
    summary = tmp_path / "summary.md"
    assert run("audit", str(SAMPLE / "published_counts.csv"), "--summary", str(summary)).exit_code
    text = summary.read_text()
    assert text.startswith("### distgate audit ") and "| row | column |" in text
    bad = run("assess", str(tmp_path / "absent.csv"), *CONFIG, "--summary", str(summary))
    assert_bad_input(bad, "absent.csv")
    assert summary.read_text() == text
    assert_bad_input(run("assess", SAFE_RELEASE, "--summary", "-"), "--format markdown")
    missing = tmp_path / "no" / "such" / "folder" / "s.md"
    assert_bad_input(run("assess", SAFE_RELEASE, *CONFIG, "--summary", str(missing)), "folder")


def test_csv_dir_writes_one_file_per_table(tmp_path):
    folder = tmp_path / "out" / "tables"
    args = ["assess", SOLDIERS, *CONFIG, "--metric", "kld,mis", "--csv-dir", str(folder)]
    result = run(*args)
    assert result.exit_code == 1
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["assess.csv", "kld.csv", "mis.csv", "per-metric.csv"]
    assert (folder / "assess.csv").read_text() == run(*args[:-2], "--format", "csv").stdout
    kld = (folder / "kld.csv").read_text().splitlines()
    assert kld[0] == "target,count,statistic,critical,decision"
    assert kld[2].startswith("L2,1299,0.3588355759291") and kld[2].endswith(",BLOCKED")
    (tmp_path / "file").write_text("")
    assert_bad_input(run(*args[:-1], str(tmp_path / "file")), "--csv-dir")
