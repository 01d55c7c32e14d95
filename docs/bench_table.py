"""The table of the performance page, from the output of ``make bench``.

Each benchmark script prints a section headed ``== bench/NAME.py``; within it, a line
``WHAT: RESULT`` is one measurement, an indented line under it adds detail to it, and a
line without a colon heads the indented ``WHAT  RESULT`` lines that follow it (a table of
its own, such as the gate's per-metric rows). The page includes the table through a cog
block (``make cog``).

Run: python docs/bench_table.py docs/bench.log
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SECTION = re.compile(r"^== bench/bench_(?P<name>\w+)\.py$")


def rows(log: str) -> list[tuple[str, str, str]]:
    """(benchmark, what was measured, result) for every measurement of the log."""
    found: list[list[str]] = []
    bench = heading = ""
    for raw in log.splitlines():
        line = raw.rstrip()
        section = SECTION.match(line)
        if section:
            bench, heading = section["name"], ""
        elif not line.strip() or not bench:
            continue
        elif not line.startswith(" "):
            what, colon, result = line.partition(": ")
            if colon:
                found.append([bench, what, " ".join(result.split())])
                heading = ""
            else:
                heading = line
        elif heading:
            what, _, result = line.strip().partition("  ")
            found.append([bench, f"{heading}: {what}", " ".join(result.split())])
        elif found:
            found[-1][2] += f"; {line.strip()}"
    return [(b, w, r) for b, w, r in found]


def markdown(log: str) -> str:
    lines = ["| benchmark | measured | result |", "|---|---|---|"]
    for bench, what, result in rows(log):
        cells = (c.replace("|", "\\|") for c in (bench, what, result))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/bench_table.py BENCH_LOG")
    sys.stdout.write(markdown(Path(sys.argv[1]).read_text()))
