"""What is done with the gate (:mod:`distgate.gate`): a request log replayed with its
decisions file and its state (:mod:`~distgate.workflows.replay`), a gate open to keys as
they come that commits each batch before answering
(:mod:`~distgate.workflows.durable_session`, what ``serve`` and
:func:`distgate.open_gate` run) and experiments over random request orders
(:mod:`~distgate.workflows.simulate`)."""
