"""The gate's state on disk: a SQLite file that a replay, a service or
:func:`distgate.open_gate` commits every batch of decisions to, so that a later one
continues where the last stopped (:mod:`~distgate.state.store`), and the commands that
read it without deciding (``state inspect``, ``verify``, ``export``)."""
