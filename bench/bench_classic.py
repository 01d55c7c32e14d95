"""Benchmark: `assess --metric kanon,ldiv,tclose` on a generated 10,000,000-record CSV
against merely reading the two used columns with the same reader (pyarrow's CSV reader,
as in bench_assess.py); goal <= 2x. tclose runs both ways: with a fixed t and with its
Monte Carlo critical value at alpha (10,000 draws per target size).

Run: python bench/bench_classic.py [--records N]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_assess import OUT, best_of, make_table, read_two_columns, table_options  # noqa: E402

METRICS = ["kanon", "ldiv", "tclose"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    path = OUT / f"assess_{args.records}.csv"
    make_table(path, args.records)

    from distgate.data.inputs import load_inputs
    from distgate.release.assess import assess_release, classic_settings

    def read_only():
        read_two_columns(path)

    options = table_options(path)

    def assess(thresholds):
        def run():
            inputs = load_inputs(options, counts_only=True)  # as `distgate assess` reads it
            values = inputs.critical_values("auto")
            settings = classic_settings(inputs, hierarchy=["age=25,40,55", "age=40"])
            result = assess_release(
                inputs.counts,
                inputs.table.target_labels,
                METRICS,
                0.2,
                values,
                thresholds,
                settings,
            )
            return result

        return run

    fixed = {"kanon": 5, "ldiv": 3, "tclose": 0.1}
    simulated = {"kanon": 5, "ldiv": 3}
    assess(fixed)()  # warm the page cache and imports
    read = best_of(args.runs, read_only)
    with_t = best_of(args.runs, assess(fixed))
    with_mc = best_of(args.runs, assess(simulated))
    print(f"read two columns of {args.records:,} records: {read:.2f} s")
    print(f"assess kanon,ldiv,tclose (fixed t):          {with_t:.2f} s")
    print(f"assess kanon,ldiv,tclose (Monte Carlo t):    {with_mc:.2f} s")
    print(
        f"ratio assess / read: {with_t / read:.2f} fixed t, "
        f"{with_mc / read:.2f} Monte Carlo (goal <= 2)"
    )


if __name__ == "__main__":
    main()
