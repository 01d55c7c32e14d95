"""Running the CLI in tests, through Typer's runner."""

import json

from typer.testing import CliRunner

from distgate.cli import app

runner = CliRunner()


def run(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def run_json(*args: str):
    result = run(*args, "--json")
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


def assert_bad_input(result, *words: str) -> None:
    """Exit 2 with one sentence on stderr that names what is wrong, and no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    message = result.stderr.strip()
    assert message.startswith("distgate: "), message
    assert len(message.splitlines()) == 1, message
    assert "Traceback" not in result.output
    for word in words:
        assert word in message, (word, message)
