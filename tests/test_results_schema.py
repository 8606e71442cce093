"""The exported JSON Schema is the model's, and Results survive a round trip."""

from __future__ import annotations

import json

import jsonschema
from helpers.paths import ROOT

from agent_eval_action.results import SCHEMA, Results, json_schema_text

SCHEMA_FILE = ROOT / "schemas" / "results.schema.json"


def test_schema_file_is_in_sync_with_the_model():
    assert SCHEMA_FILE.read_text() == json_schema_text(), (
        "schemas/results.schema.json is stale: run "
        "`python -m agent_eval_action.results > schemas/results.schema.json`"
    )


def test_schema_pins_the_version_and_rejects_another():
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    minimal = {
        "schema": SCHEMA,
        "tool_version": "0",
        "run_config": {"runner": "command"},
        "eval_sets": [],
        "cases": [],
        "timing": {
            "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:00:01Z",
            "duration_s": 1,
        },
    }
    jsonschema.validate(minimal, schema)
    Results.from_json(json.dumps(minimal))
    newer = {**minimal, "schema": "agent-eval-results/2"}
    assert not jsonschema.Draft202012Validator(schema).is_valid(newer)
