"""GitHub's OpenAPI description (@octokit/openapi, unpacked by .ci/run) as JSON-Schema checks.

OpenAPI 3.0 schemas are draft-4-like except `nullable`, which is rewritten to a `null` type.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / ".ci" / "openapi" / "package" / "generated" / "api.github.com.json"


def _without_nullable(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _without_nullable(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:  # `$ref`/`allOf` + nullable: no type to widen
            out = {"anyOf": [out, {"type": "null"}]}
    return out


class OpenAPI:
    def __init__(self, spec: dict[str, Any]):
        self.paths = spec["paths"]
        self.components = _without_nullable(spec["components"])

    def _deref(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            kind, name = node["$ref"].split("/")[-2:]
            node = self.components[kind][name]
        return node

    def _check(self, schema: dict[str, Any], instance: Any, what: str) -> list[str]:
        root = {"components": self.components, "allOf": [_without_nullable(schema)]}
        validator = jsonschema.Draft4Validator(root)
        return [
            f"{what}: {'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
            for e in validator.iter_errors(instance)
        ]

    def request_errors(self, method: str, template: str, body: Any) -> list[str]:
        op = self.paths[template][method.lower()]
        schema = self._deref(op["requestBody"])["content"]["application/json"]["schema"]
        return self._check(schema, body, f"{method} {template} request")

    def response_errors(self, method: str, template: str, status: int, body: Any) -> list[str]:
        op = self.paths[template][method.lower()]
        described = op["responses"].get(str(status))
        if described is None:
            return [f"{method} {template}: status {status} is not described"]
        content = self._deref(described).get("content", {}).get("application/json")
        if content is None:
            return [] if body is None else [f"{method} {template} {status}: body not described"]
        return self._check(content["schema"], body, f"{method} {template} {status} response")


@functools.cache
def load() -> OpenAPI | None:
    if not SPEC_PATH.is_file():
        return None
    return OpenAPI(json.loads(SPEC_PATH.read_text()))
