"""The OpenAPI 3.1 document of ``distgate serve`` (served at ``/openapi.json``).

Written out rather than derived from the handlers, so that what it promises is stated in
one place: a requester's answer is ``Released`` (the record, released at or after the
request) or ``Withheld`` (exactly ``request``, ``key`` and ``decision``), both with
``additionalProperties: false``; the gate's ``duplicate`` and other requests' indices
appear only in the operator's ``OperatorView`` with ``?detail=1``. The tests run
schemathesis against a live server with this document, as a requester and as the
operator.
"""

from __future__ import annotations

from typing import Any

DECISIONS = ["released", "queued", "denied", "duplicate", "unknown"]
HEAD_400 = (
    "The request is not well-formed HTTP/1.1, or its head is refused: no Host field, or "
    "two; two Authorization fields; a body chunked twice; a query parameter given twice."
)


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _json(schema: str, description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }


def _query(name: str, schema: dict, description: str) -> dict:
    return {"name": name, "in": "query", "schema": schema, "description": description}


def openapi(limits) -> dict[str, Any]:
    """The document, with the service's limits in its descriptions and bounds."""
    key = {
        "type": "string",
        "maxLength": limits.max_key_bytes,
        "description": f"At most {limits.max_key_bytes} bytes in UTF-8 (maxLength counts "
        "characters: a key of fewer characters may still take more bytes, and is refused).",
    }
    # what any request may be answered for its head (distgate.serve.head) or framing
    head = {
        "400": _error(HEAD_400),
        "415": _error(
            "The body has a content coding other than identity (answered with "
            "Accept-Encoding: identity)."
        ),
        "501": _error("The body has a transfer coding other than chunked."),
    }
    common = {
        **head,
        "401": _error("No token, or one the service does not know."),
        "503": _error("Loading, or the state file cannot be written (nothing was decided)."),
    }
    record = {
        "type": "object",
        "description": "The released record: its target and attribute values (a binned "
        "attribute's range, as the gate judged it) and the columns named by --columns.",
        "additionalProperties": {"type": ["string", "null"]},
    }
    withheld = {
        "type": "object",
        "description": "A request whose record is not released for it (queued, denied with "
        "--no-queue, or an unknown key): nothing but these three fields.",
        "required": ["request", "key", "decision"],
        "additionalProperties": False,
        "properties": {
            "request": {"type": "integer", "minimum": 0},
            "key": {"type": "string"},
            "decision": {"type": "string", "enum": ["queued", "denied", "unknown"]},
        },
    }
    released_properties = {
        "request": {"type": "integer", "minimum": 0},
        "key": {"type": "string"},
        "decision": {"type": "string", "enum": ["released"]},
        "released_at": {
            "type": "integer",
            "minimum": 0,
            "description": "The request index at which the record was released for this "
            "request: the request itself (released at once, or released before it for "
            "someone), or a later one (released from the queue). Never before the request.",
        },
        "record": {"$ref": "#/components/schemas/Record"},
    }
    released = {
        "type": "object",
        "description": "A request whose record has been released for it, as if it were "
        "the first request for its key.",
        "required": ["request", "key", "decision", "released_at", "record"],
        "additionalProperties": False,
        "properties": released_properties,
    }
    operator_released = {
        "type": "object",
        "description": "A release as the operator reads it: the requester's view and who "
        "asked (null for the operator or a replay).",
        "required": ["request", "key", "decision", "released_at", "record", "requester"],
        "additionalProperties": False,
        "properties": {**released_properties, "requester": {"type": ["string", "null"]}},
    }
    operator_view = {
        "type": "object",
        "description": "A request as the operator reads it: its requester's view and who "
        "asked (null for the operator or a replay); with ?detail=1 the state's row instead: "
        "the gate's word (duplicate for a record released before), the request index at "
        "which the record was released (an earlier one for a duplicate), and the target, "
        "value, statistic and critical value of replay's decisions file (with several "
        "views, its view column: the view that blocked the request, null for none).",
        "required": ["request", "key", "decision", "requester"],
        "additionalProperties": False,
        "properties": {
            "request": {"type": "integer", "minimum": 0},
            "key": {"type": "string"},
            "decision": {"type": "string", "enum": DECISIONS},
            "released_at": {"type": "integer", "minimum": 0},
            "record": {"$ref": "#/components/schemas/Record"},
            "requester": {"type": ["string", "null"]},
            "target": {"type": ["string", "null"]},
            "value": {"type": ["string", "null"]},
            "statistic": {"type": ["number", "string", "null"]},
            "critical": {"type": ["number", "string", "null"]},
            "view": {"type": ["string", "null"]},
        },
    }
    count = {"type": "integer", "minimum": 0}
    summary = {
        "type": "object",
        "required": ["requests", "decisions", "metrics", "alpha", "queue", "grace", "targets"],
        "properties": {
            "requests": count,
            "decisions": {"type": "object", "additionalProperties": count},
            "metrics": {"type": "array", "items": {"type": "string"}},
            "alpha": {"type": "number"},
            "queue": {"type": "boolean"},
            "grace": {"type": "string"},
            "targets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["target", "requested", "percent_released"],
                    "properties": {
                        "target": {"type": "string"},
                        "requested": count,
                        "released_at_once": count,
                        "released_from_queue": count,
                        "still_queued": count,
                        "percent_released": {"type": "number"},
                    },
                },
            },
            "views": {
                "type": "array",
                "description": "With several views, one per view in the order given: the "
                "requests it was the first to block (queued or denied), those of them still "
                "unreleased, and its records requested and released per target of its Y.",
                "items": {
                    "type": "object",
                    "required": ["view", "blocked", "still_blocked", "targets"],
                    "properties": {
                        "view": {"type": "string"},
                        "blocked": count,
                        "still_blocked": count,
                        "targets": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["target", "requested", "released"],
                                "properties": {
                                    "target": {"type": "string"},
                                    "requested": count,
                                    "released": count,
                                    "percent_released": {"type": "number"},
                                },
                            },
                        },
                    },
                },
            },
            "gate": {"type": "object"},
            "held_back": {  # with the indistinguishable rule: the targets it keeps queued
                "type": "array",
                "items": {"type": "string"},
            },
        },
    }
    decision = {
        "oneOf": [
            {"$ref": "#/components/schemas/Released"},
            {"$ref": "#/components/schemas/Withheld"},
        ]
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "distgate serve",
            "version": "1",
            "description": "The online release gate as a service: requesters ask for records "
            "by key; each request is decided against everything released before, with a "
            "queue for those that must wait. An answer is sent only once its decision is "
            "committed to the state file. Every answer carries Cache-Control: no-store and "
            "X-Content-Type-Options: nosniff.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Record": record,
                "Withheld": withheld,
                "Released": released,
                "OperatorReleased": operator_released,
                "Decision": decision,
                "OperatorView": operator_view,
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "additionalProperties": False,
                    "properties": {"error": {"type": "string"}},
                },
                "Summary": summary,
                "Health": {
                    "type": "object",
                    "required": ["status"],
                    "additionalProperties": False,
                    "properties": {
                        "status": {"type": "string", "enum": ["ok", "loading", "unwritable"]}
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/requests": {
                "post": {
                    "summary": "Ask for one record, or a batch of records in order.",
                    "requestBody": {
                        "required": True,
                        "description": f"At most {limits.max_body} bytes and "
                        f"{limits.max_batch} keys.",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "oneOf": [
                                        {
                                            "type": "object",
                                            "required": ["key"],
                                            "not": {"required": ["requests"]},
                                            "properties": {"key": key},
                                        },
                                        {
                                            "type": "object",
                                            "required": ["requests"],
                                            "not": {"required": ["key"]},
                                            "properties": {
                                                "requests": {
                                                    "type": "array",
                                                    "maxItems": limits.max_batch,
                                                    "items": {
                                                        "type": "object",
                                                        "required": ["key"],
                                                        "properties": {"key": key},
                                                    },
                                                }
                                            },
                                        },
                                    ]
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "The decision (one key), or the decisions in the "
                            'order asked ({"decisions": [...]}).',
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "oneOf": [
                                            {"$ref": "#/components/schemas/Decision"},
                                            {
                                                "type": "object",
                                                "required": ["decisions"],
                                                "properties": {
                                                    "decisions": {
                                                        "type": "array",
                                                        "items": {
                                                            "$ref": "#/components/schemas/Decision"
                                                        },
                                                    }
                                                },
                                            },
                                        ]
                                    }
                                }
                            },
                        },
                        **common,
                        "400": _error(
                            "The body is not JSON that can be read (not UTF-8: UTF-16 "
                            "neither; nested too deeply). " + HEAD_400
                        ),
                        "408": _error("The body was not received in time."),
                        "413": _error("The body, or the batch, is over its limit."),
                        "422": _error(
                            "The JSON has the wrong shape or types, or a key is not Unicode "
                            f"text or has over {limits.max_key_bytes} bytes."
                        ),
                    },
                }
            },
            "/v1/requests/{n}": {
                "get": {
                    "summary": "Request n as it stands now (a requester: its own only).",
                    "parameters": [
                        {
                            "name": "n",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer", "minimum": 0},
                        },
                        _query(
                            "detail",
                            {"type": "integer", "enum": [0, 1]},
                            "1: the state's row, with target, value, statistic and critical "
                            "(operator only).",
                        ),
                    ],
                    "responses": {
                        "200": {
                            "description": "The request: a requester gets Decision, the "
                            "operator OperatorView.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "oneOf": [
                                            {"$ref": "#/components/schemas/Decision"},
                                            {"$ref": "#/components/schemas/OperatorView"},
                                        ]
                                    }
                                }
                            },
                        },
                        "403": _error("A requester asked for the detail."),
                        "404": _error("No such request, or another requester's."),
                        "422": _error("detail is not 0 or 1."),
                        **common,
                    },
                }
            },
            "/v1/releases": {
                "get": {
                    "summary": "Releases made after request index `after` (a requester: of "
                    "its own requests), in order; continue with after = next.",
                    "parameters": [
                        _query(
                            "after",
                            {"type": "integer", "minimum": -1, "maximum": 2**62},
                            "The request index after which releases are listed (-1, the "
                            "default: all).",
                        ),
                        _query(
                            "limit",
                            {"type": "integer", "minimum": 1, "maximum": limits.page},
                            f"Releases in the page, about (default {limits.page}); those "
                            "made at one request index are never split.",
                        ),
                    ],
                    "responses": {
                        "200": {
                            "description": "A page of releases.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["releases", "next"],
                                        "properties": {
                                            "releases": {
                                                "type": "array",
                                                "items": {
                                                    "oneOf": [
                                                        {"$ref": "#/components/schemas/Released"},
                                                        {
                                                            "$ref": "#/components/schemas/"
                                                            "OperatorReleased"
                                                        },
                                                    ]
                                                },
                                            },
                                            "next": {"type": "integer", "minimum": -1},
                                        },
                                    }
                                }
                            },
                        },
                        "422": _error(
                            "A query parameter is not a whole number in ASCII digits, or "
                            "not in range."
                        ),
                        **common,
                    },
                }
            },
            "/v1/summary": {
                "get": {
                    "summary": "The per-target table of replay's report (operator only).",
                    "responses": {
                        "200": _json("Summary", "The summary."),
                        "403": _error("Not the operator."),
                        **common,
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus text format (operator only).",
                    "responses": {
                        "200": {
                            "description": "The metrics.",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        },
                        "403": _error("Not the operator."),
                        **common,
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "200 when ready; 503 while loading or when the state file "
                    "cannot be written.",
                    "security": [],
                    "responses": {
                        "200": _json("Health", "Ready."),
                        "503": _json("Health", "Loading, or the state cannot be written."),
                        **head,
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This document.",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "The OpenAPI document.",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **head,
                    },
                }
            },
        },
    }
