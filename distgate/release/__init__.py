"""Decisions on a whole release: assess it, describe its baseline, repair it (fix and the
merge search) and audit a published contingency table."""
