"""Make docs/observer_frontier.png: the frontier of the ordinary gate on the many-target
sample table (sample_data/units.csv), kld at alpha 0.05 to 0.95, 20 random orders.

Run from the top of the checkout: python docs/make_observer_plot.py
"""

import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

from distgate.cli import run

DOCS = Path(__file__).resolve().parent
SAMPLE = DOCS.parent / "sample_data"
ALPHAS = "0.05,0.1,0.2,0.3,0.5,0.7,0.9,0.95"

with tempfile.TemporaryDirectory() as folder, contextlib.chdir(SAMPLE):
    code = run(
        ["simulate", "units.csv", "-x", "grade", "-y", "unit", "--id", "id", "--metric", "kld"]
        + ["--alpha", ALPHAS, "--attack", "--plot", folder, "--quiet", "--json"]
    )
    if code == 0:
        shutil.copy(Path(folder) / "observer_frontier.png", DOCS / "observer_frontier.png")
sys.exit(code)
