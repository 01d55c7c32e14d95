"""Make docs/replay_evolution.png: the evolution plot of ``distgate replay`` on the sample
data (the first metric's statistic and critical value against the released tuples, one
panel per target).

Run from the top of the checkout: python docs/make_plot.py
"""

import contextlib
import sys
from pathlib import Path

from distgate.cli import run

DOCS = Path(__file__).resolve().parent
SAMPLE = DOCS.parent / "sample_data"

with contextlib.chdir(SAMPLE):
    code = run(
        ["replay", "soldiers.csv", "requests.csv", "--plot", str(DOCS / "replay_evolution.png")]
    )
sys.exit(code)
