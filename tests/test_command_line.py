"""The command line as users run it. Through :func:`distgate.cli.run` (what the console
script's ``main()`` runs, the app of the one command named: ``make_app(only=...)``):
click's usage errors in distgate's one style, help and version. Through the installed
console script itself, in a process of its own: ``main()`` leaves with the command's exit
code (by ``os._exit``) after everything it printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from distgate import __version__
from distgate.cli import COMMANDS, GROUPS
from tests.cli_helpers import invoke
from tests.conftest import REPO, SAMPLE

SCRIPT = Path(sys.executable).with_name("distgate")  # the console script of this install
# the environment without what would make the report a terminal's
PLAIN = {
    name: value
    for name, value in os.environ.items()
    if name not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
}


@pytest.fixture(autouse=True)
def _in_the_sample_folder(monkeypatch):
    monkeypatch.chdir(SAMPLE)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["assess", "soldiers.csv", "--colour"],
            "No such option: --colour (see 'distgate assess --help')",
        ),
        (["assess"], "Missing argument 'TABLE' (see 'distgate assess --help')"),
        (["replay", "soldiers.csv"], "Missing argument 'REQUESTS' (see 'distgate replay --help')"),
        (
            ["assess", "soldiers.csv", "--alpha", "x"],
            "Invalid value for '--alpha' / '-a': 'x' is not a valid float "
            "(see 'distgate assess --help')",
        ),
        (
            ["baseline", "soldiers.csv", "--format", "yaml"],
            "Invalid value for '--format' / '-f': 'yaml' is not one of 'table', 'json', 'csv', "
            "'markdown', 'junit' (see 'distgate baseline --help')",
        ),
        (
            # a value given is shown escaped: it cannot recolour the terminal
            ["assess", "soldiers.csv", "--alpha", "\x1b[31m"],
            "Invalid value for '--alpha' / '-a': '\\x1b[31m' is not a valid float "
            "(see 'distgate assess --help')",
        ),
        (["state", "inspect"], "Missing argument 'FILE' (see 'distgate state inspect --help')"),
        (["state", "nosuch"], "No such command 'nosuch' (see 'distgate state --help')"),
        (["nosuch"], "No such command 'nosuch' (see 'distgate --help')"),
        (["--bogus"], "No such option: --bogus (see 'distgate --help')"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_a_usage_error_is_one_sentence_naming_the_help_to_read(args, message):
    ran = invoke(args)
    assert (ran.exit_code, ran.stdout, ran.stderr) == (2, "", f"distgate: {message}.\n")


def test_no_command_and_a_group_without_its_command_print_their_help():
    ran = invoke([])
    assert ran.exit_code == 0 and ran.stderr == ""
    assert ran.stdout.startswith("Usage: distgate [OPTIONS] COMMAND [ARGS]...\n")
    assert all(f"\n  {name} " in ran.stdout for name, _, _ in COMMANDS)
    group = invoke(["state"])
    assert group.exit_code == 0
    assert group.stdout.startswith("Usage: distgate state [OPTIONS] COMMAND [ARGS]...\n")


def test_the_version():
    assert invoke(["--version"]).stdout == f"distgate {__version__}\n"


def reference_help() -> dict[str, str]:
    """The ``--help`` of every command in docs/cli-reference.md (made from the app of
    every command), by the words that name it (``assess``, ``state inspect``)."""
    page = (REPO / "docs" / "cli-reference.md").read_text()
    blocks = re.findall(r"^## distgate ?([^\n]*)\n\n```\n(.*?)^```$", page, re.S | re.M)
    return {words: text for words, text in blocks}


def commands() -> list[str]:
    import importlib

    names = [name for name, _, _ in COMMANDS]
    for group, module in GROUPS:
        names.append(group)
        app = importlib.import_module(f"distgate.cli.{module}").app
        names += [f"{group} {command.name}" for command in app.registered_commands]
    return names


@pytest.mark.parametrize("words", commands())
def test_a_command_alone_has_the_help_of_the_reference(words):
    """run() builds the app of the one command named: its help is the reference's, which
    the app of every command printed."""
    ran = invoke([*words.split(), "--help"])
    assert ran.exit_code == 0
    assert ran.stdout == reference_help()[words]


def script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=SAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
        env=PLAIN | {"COLUMNS": "80"},
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["assess", "soldiers.csv", "--metric", "kld,mis"], 1),
        (["baseline", "soldiers.csv", "--format", "csv"], 0),
        (["assess", "soldiers.csv", "--colour"], 2),
        (["--version"], 0),
    ],
    ids=["unsafe", "safe", "usage-error", "version"],
)
def test_the_console_script_leaves_with_the_exit_code_after_all_its_output(args, code):
    """The installed script prints what run() prints, to its last line, and exits with
    its code (0 done, 1 unsafe, 2 bad input)."""
    assert SCRIPT.exists(), f"{SCRIPT}: distgate is not installed in this environment"
    done = script(*args)
    assert done.returncode == code, done.stderr
    ran = invoke(args, env={"COLUMNS": "80"})
    assert (done.stdout, done.stderr) == (ran.stdout, ran.stderr)
    assert done.stdout or done.stderr
