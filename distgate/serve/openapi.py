"""The OpenAPI 3.1 document of ``distgate serve`` (served at ``/openapi.json``).

Written out rather than derived from the handlers, so that what it promises is stated in
one place: a requester's answer for a request whose record is not released has exactly
the fields ``request``, ``key`` and ``decision`` (``additionalProperties: false``).
"""

from __future__ import annotations

from typing import Any

DECISIONS = ["released", "queued", "denied", "duplicate", "unknown"]


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


def openapi(limits) -> dict[str, Any]:
    """The document, with the service's limits in its descriptions."""
    common = {
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
        "description": "A request whose record is not released (queued, denied, unknown, "
        "or a repeated request of a queued record): nothing but these three fields.",
        "required": ["request", "key", "decision"],
        "additionalProperties": False,
        "properties": {
            "request": {"type": "integer", "minimum": 0},
            "key": {"type": "string"},
            "decision": {"type": "string", "enum": ["queued", "denied", "unknown"]},
        },
    }
    released = {
        "type": "object",
        "description": "A request whose record has been released (at once, later from the "
        "queue, or earlier: a duplicate).",
        "required": ["request", "key", "decision", "released_at", "record"],
        "additionalProperties": False,
        "properties": {
            "request": {"type": "integer", "minimum": 0},
            "key": {"type": "string"},
            "decision": {"type": "string", "enum": ["released", "queued", "duplicate"]},
            "released_at": {
                "type": "integer",
                "description": "The request index at which the record was released.",
            },
            "record": {"$ref": "#/components/schemas/Record"},
        },
    }
    operator_view = {
        "type": "object",
        "description": "A request as the operator reads it: the requester's view, who asked "
        "(null for the operator or a replay), and with ?detail=1 the target, value, "
        "statistic and critical value of replay's decisions file.",
        "required": ["request", "key", "decision", "requester"],
        "properties": {
            "request": {"type": "integer"},
            "key": {"type": "string"},
            "decision": {"type": "string", "enum": DECISIONS},
            "released_at": {"type": "integer"},
            "record": {"$ref": "#/components/schemas/Record"},
            "requester": {"type": ["string", "null"]},
            "target": {"type": ["string", "null"]},
            "value": {"type": ["string", "null"]},
            "statistic": {"type": ["number", "string", "null"]},
            "critical": {"type": ["number", "string", "null"]},
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
            "committed to the state file.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Record": record,
                "Withheld": withheld,
                "Released": released,
                "Decision": decision,
                "OperatorView": operator_view,
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "string"}},
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
                                            "properties": {"key": {"type": "string"}},
                                        },
                                        {
                                            "type": "object",
                                            "required": ["requests"],
                                            "properties": {
                                                "requests": {
                                                    "type": "array",
                                                    "maxItems": limits.max_batch,
                                                    "items": {
                                                        "type": "object",
                                                        "required": ["key"],
                                                        "properties": {"key": {"type": "string"}},
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
                        "400": _error("The body is not JSON."),
                        "408": _error("The body was not received in time."),
                        "413": _error("The body, or the batch, is over its limit."),
                        "422": _error("The JSON has the wrong shape or types."),
                        **common,
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
                            "schema": {"type": "integer"},
                        },
                        {
                            "name": "detail",
                            "in": "query",
                            "schema": {"type": "integer", "enum": [0, 1]},
                            "description": "1: target, value, statistic, critical (operator).",
                        },
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
                        **common,
                    },
                }
            },
            "/v1/releases": {
                "get": {
                    "summary": "Releases made after request index `after` (a requester: of "
                    "its own requests), in order; continue with after = next.",
                    "parameters": [
                        {"name": "after", "in": "query", "schema": {"type": "integer"}},
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "maximum": limits.page},
                        },
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
                                                "items": {"$ref": "#/components/schemas/Released"},
                                            },
                                            "next": {"type": "integer"},
                                        },
                                    }
                                }
                            },
                        },
                        "422": _error("A query parameter is not a whole number in range."),
                        **common,
                    },
                }
            },
            "/v1/summary": {
                "get": {
                    "summary": "The per-target table of replay's report (operator only).",
                    "responses": {
                        "200": {"description": "The summary."},
                        "403": _error("Not the operator."),
                        **common,
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus text format (operator only).",
                    "responses": {
                        "200": {"description": "The metrics."},
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
                    "responses": {"200": {"description": "Ready."}, "503": {"description": "No."}},
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This document.",
                    "security": [],
                    "responses": {"200": {"description": "The OpenAPI document."}},
                }
            },
        },
    }
