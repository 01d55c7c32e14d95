"""The online release gate (SPEC 4): requests in, decisions out, state kept incrementally."""
