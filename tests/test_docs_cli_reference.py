"""The generated parts of the documentation are up to date.

``docs/cli-reference.md`` holds the ``--help`` of every command and ``docs/performance.md``
the table made from the saved benchmark log, both written by cog blocks. A changed option,
help text or log without ``make cog`` fails here.
"""

from pathlib import Path

from cogapp import Cog

DOCS = Path(__file__).resolve().parent.parent / "docs"
GENERATED = ("cli-reference.md", "performance.md")


def test_the_cli_reference_and_the_benchmark_table_are_regenerated(capsys):
    status = Cog().main(["cog", "--check", *(str(DOCS / name) for name in GENERATED)])
    assert status == 0, f"stale: run 'make cog' ({capsys.readouterr().out.strip()})"


def test_the_cli_reference_lists_every_command():
    from distgate.cli import COMMANDS

    page = (DOCS / "cli-reference.md").read_text()
    for name, _, _ in COMMANDS:
        assert f"## distgate {name}\n" in page
        assert f"Usage: distgate {name} [OPTIONS]" in page
