"""``distgate serve``: the online gate as an HTTP service (needs the ``serve`` extra).

:mod:`~distgate.serve.app` is the ASGI application (routes, what each client may read),
:mod:`~distgate.serve.head` what it refuses of a request's head,
:mod:`~distgate.serve.problem` its errors, :mod:`~distgate.serve.auth` the bearer tokens,
:mod:`~distgate.serve.batcher` the group commit, :mod:`~distgate.serve.render` a batch's
JSON, :mod:`~distgate.serve.metrics` the Prometheus text, :mod:`~distgate.serve.openapi`
the OpenAPI document, :mod:`~distgate.serve.protocol` the answers to what uvicorn's parser
refuses and :mod:`~distgate.serve.server` uvicorn and the background loading. The gate
behind it is :class:`distgate.workflows.durable_session.DurableSession`.
"""
