"""The API of a gate's state file (``replay --state``, ``serve``, :func:`open_gate`), read
without changing it: :func:`inspect_state`, :func:`verify_state`, :func:`export_state`."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from distgate.api.common import File, Table
from distgate.data.spec import TABLE_KEYWORDS, table_spec

if TYPE_CHECKING:
    from distgate.state.inspection import StateSummary
    from distgate.state.verify import Verification

# what the state says of its table: it is read with the state's own columns, key and bins,
# one record per request (no weight); verify_state takes the other table keywords
READ_BY_THE_STATE = ("attributes", "targets", "id", "bins", "weight")
VERIFY_KEYWORDS = tuple(name for name in TABLE_KEYWORDS if name not in READ_BY_THE_STATE)


def inspect_state(state: File) -> StateSummary:
    """What the state file ``state`` holds, as ``distgate state inspect`` shows it: its
    schema, the table's fingerprint and size, the columns and options it was built with,
    its requests and their decisions by word, the released records, the queue, the request
    logs and the last commit (:class:`~distgate.state.inspection.StateSummary`;
    ``to_dict()`` is the command's ``--json`` document). A file that is not a distgate
    state is an InputError."""
    from distgate.state.inspection import inspect_state as summarised

    return summarised(os.fspath(state))


def verify_state(state: File, table: Table = None, **table_keywords: Any) -> Verification:
    """Check that the state file ``state`` holds together, and with ``table`` (a file or
    a table in memory) that it agrees with its table, as ``distgate state verify`` does:
    the table is read with the state's own attribute and target columns, key column and
    bins; the table keywords taken say how (``baseline``, ``missing``, ``order``,
    ``delimiter``, ``encoding``, ``engine``, ``scheduler``, ``config``).

    The :class:`~distgate.state.verify.Verification` is ``verified`` when no check failed,
    else ``first_disagreement`` names the first that did; its ``reading`` says how the
    table was read (None without one)."""
    from distgate.state.verify import state_table_settings
    from distgate.state.verify import verify_state as verified

    spec = table_spec(table, table_keywords, "verify_state", VERIFY_KEYWORDS)
    settings = spec.settings()
    inputs = reading = None
    if spec.table is not None:
        own = {**settings, **state_table_settings(os.fspath(state))}
        inputs, reading = spec.read(own, need_keys=True)
        reading = dataclasses.replace(reading, settings=settings)  # the file's own values
    result = verified(os.fspath(state), inputs)
    result.reading = reading
    return result


def export_state(state: File, output: File) -> int:
    """Write every request of the state file ``state``, in arrival order, with its
    decision, to ``output`` in replay's decisions format
    (request,key,target,value,decision,released_at,statistic,critical; ``"-"``: standard
    output), as ``distgate state export`` does; returns how many. A running service or
    replay on the state may go on meanwhile."""
    from distgate.data.atomic import check_outputs
    from distgate.workflows.durable_session import export_decisions

    check_outputs([os.fspath(state)], [os.fspath(output)])
    return export_decisions(os.fspath(state), os.fspath(output))
