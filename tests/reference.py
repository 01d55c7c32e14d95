"""The reference figures of the SPEC (section 9, and section 7's audit example), written once
and shared by the tests."""

import numpy as np

AGE_BANDS = ["<18", "18-19", "20-24", "25-29", "30-34", "35-39", "40-44", "45-49", "50-54", ">=55"]
AGE_EDGES = [18, 20, 25, 30, 35, 40, 45, 50, 55]
LOCATIONS = ["L1", "L2", "L3", "L4", "L5"]
# counts C[y, x]: rows are locations, columns age bands
COUNTS = np.array(
    [
        [72, 151, 539, 452, 335, 321, 128, 20, 9, 2],
        [26, 53, 147, 114, 213, 238, 219, 205, 71, 13],
        [38, 82, 449, 370, 234, 277, 122, 50, 28, 2],
        [47, 140, 505, 418, 318, 332, 162, 49, 34, 2],
        [73, 223, 736, 613, 501, 538, 220, 76, 31, 2],
    ]
)
BASELINE = COUNTS.sum(axis=0) / COUNTS.sum()

KL = [0.047349, 0.358836, 0.013967, 0.007375, 0.010879]
MUTUAL_INFORMATION = 0.063285
ALPHA = 0.05
MUTUAL_INFORMATION_CRITICAL = 0.004448
KL_CRITICAL = [0.006015, 0.009395, 0.007388, 0.006081, 0.004051]
PEARSON = [104.532750, 878.201780, 30.837391, 17.340740, 39.875054]
PEARSON_CRITICAL = [15.507313, 16.918978, 15.507313, 15.507313, 15.507313]
# The merging rule gives 9 groups for L1, L3, L4, L5 (the last two age bands merge) and
# 10 for L2; F_c = chi2.ppf(0.95, G - 1) is then exactly the SPEC's critical values (the
# SPEC's parenthetical "8 groups" / "9 groups" are the degrees of freedom).
PEARSON_GROUPS = [9, 10, 9, 9, 9]
DIXON_Q = 0.886263
DIXON_CRITICAL_N5 = 0.642
OUTLIERS = ["L2"]

# Dixon r10 table of SPEC 3.1: alpha -> critical values for n = 3..10
DIXON_TABLE = {
    0.20: [0.781, 0.560, 0.451, 0.386, 0.344, 0.314, 0.290, 0.273],
    0.10: [0.886, 0.679, 0.557, 0.482, 0.434, 0.399, 0.370, 0.349],
    0.05: [0.941, 0.765, 0.642, 0.560, 0.507, 0.468, 0.437, 0.412],
    0.01: [0.988, 0.889, 0.780, 0.698, 0.637, 0.590, 0.555, 0.527],
}

# Leakage examples: (baseline, target distribution, L_D, L_E)
LEAKAGE = [
    (np.array([10, 2, 2, 2]) / 16, np.array([4, 4, 4, 4]) / 16, 0.433013, 0.451205),
    (np.array([10, 2, 2, 2]) / 16, np.array([12, 4, 0, 0]) / 16, 0.25, 0.737517),
    (np.array([3, 4, 5]) / 12, np.array([2, 2, 0]) / 4, 0.513701, 0.554585),
    (np.array([3, 4, 5]) / 12, np.array([0, 0, 4]) / 4, 0.716860, 1.554585),
]
EMD_BASELINE = np.full(9, 1 / 9)
EMD_TARGET = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0]) / 3
EMD = 0.375

# SPEC 7's example (sample_data/published_counts.csv), nothing published: each cell's
# upper bound by row, over the columns T1..T5 (the lower bounds are 0 but P1/T1 2 and
# P1/T3 4)
SPEC_UPPER = {
    "P1": [16, 4, 18, 3, 2],
    "P2": [5, 4, 5, 3, 2],
    "P3": [4, 4, 4, 3, 2],
    "P4": [5, 4, 5, 3, 2],
}
