"""A report's checks as a JUnit XML test report, the format CI systems (GitHub, GitLab,
Jenkins) display natively.

One ``<testsuite>`` per suite of checks (a metric at its alpha, an audit at its tau, a
replay), one ``<testcase>`` per check (a target, a cell, the whole release), and a
``<failure>`` in each case that did not pass, whose message gives the figures behind the
judgement (statistic, critical value, alpha); a passing case carries the same figures as
``<system-out>``, so that it shows how close it came. Each suite's properties name the
command, its inputs, the exit code and the verdict. The structure is the common
one of JUnit's XML (Ant's and Surefire's reports, which Jenkins' schema describes):
``testsuites`` > ``testsuite`` (``name``, ``tests``, ``failures``, ``errors``) >
``testcase`` (``name``, ``classname``) > ``failure`` (``message``, ``type``).

The report only describes the verdict: the command's exit code stays what it would be
in any other format.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from distgate.report.labels import shown
from distgate.report.model import Check, Report

FAILURE_TYPE = "blocked"


def _clean(text: str) -> str:
    """A label read from a file may hold a character XML cannot (a control character, a
    lone surrogate), or one that acts when a CI system shows it (an ANSI escape, a
    right-to-left override): every such character is shown escaped
    (:func:`distgate.report.labels.shown`)."""
    return shown(str(text))


def _classname(command: str, check: Check) -> str:
    return ".".join(["distgate", command.split()[0], check.key or "checks"])


def to_junit(report: Report) -> str:
    """The checks of ``report`` as a JUnit XML document (``<testsuites>``). It holds no
    time, date or host name: the same inputs give the same document."""
    suites: dict[str, list[Check]] = {}
    for check in report.checks:
        suites.setdefault(check.suite, []).append(check)
    failures = sum(not c.passed for c in report.checks)
    root = ET.Element(
        "testsuites",
        name=_clean(f"distgate {report.command}"),
        tests=str(len(report.checks)),
        failures=str(failures),
        errors="0",
        time="0",
    )
    for suite, checks in suites.items():
        element = ET.SubElement(
            root,
            "testsuite",
            name=_clean(suite),
            tests=str(len(checks)),
            failures=str(sum(not c.passed for c in checks)),
            errors="0",
            skipped="0",
            time="0",
        )
        properties = ET.SubElement(element, "properties")
        for name, value in _properties(report):
            ET.SubElement(properties, "property", name=_clean(name), value=_clean(value))
        for check in checks:
            case = ET.SubElement(
                element,
                "testcase",
                name=_clean(check.name),
                classname=_clean(_classname(report.command, check)),
                time="0",
            )
            if check.passed:
                ET.SubElement(case, "system-out").text = _clean(check.message)
            else:
                failure = ET.SubElement(
                    case, "failure", message=_clean(check.message), type=FAILURE_TYPE
                )
                failure.text = _clean(check.message)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _properties(report: Report) -> list[tuple[str, str]]:
    """The command, its inputs, the exit code and the verdict."""
    found = [("command", f"distgate {report.command}")]
    found += [("input", path) for path in report.inputs]
    found.append(("exit code", str(report.exit_code)))
    if report.verdict is not None:
        found.append(("verdict", report.verdict.plain.strip()))
    return found
