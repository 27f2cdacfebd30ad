"""What the tests share: the server under test (from the environment), fresh workspaces, the OpenAPI document.

test/clients/python-client.node.test.ts starts the real local server (wrangler dev + the bash
runner), makes the keys and runs these tests with:
  TOOLSHED_URL, TOOLSHED_KEY (an agent's key: read, write, execute),
  TOOLSHED_APPROVE_KEY (an app's key: read, write, approve), TOOLSHED_LIMITED_KEY (calls_per_minute 60).
"""
from __future__ import annotations

import json
import os
import unittest
import urllib.request
import uuid
from typing import Any, Dict, List, Optional

from toolshed import Toolshed, Workspace

URL = os.environ.get("TOOLSHED_URL", "")
KEY = os.environ.get("TOOLSHED_KEY", "")
APPROVE_KEY = os.environ.get("TOOLSHED_APPROVE_KEY", "")
LIMITED_KEY = os.environ.get("TOOLSHED_LIMITED_KEY", "")

_document: Optional[Dict[str, Any]] = None


def openapi() -> Dict[str, Any]:
    """GET /openapi.json of the server under test (public)."""
    global _document
    if _document is None:
        with urllib.request.urlopen(f"{URL}/openapi.json", timeout=60) as r:
            _document = json.loads(r.read().decode("utf-8"))
    return _document


def resolve(schema: Dict[str, Any]) -> Dict[str, Any]:
    """A schema with its $ref followed and its allOf parts merged (properties and required)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return resolve(openapi()["components"]["schemas"][name])
    if "allOf" in schema:
        merged: Dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            p = resolve(part)
            merged["properties"].update(p.get("properties", {}))
            merged["required"] += p.get("required", [])
        return merged
    return schema


def typed_dict_keys(cls: Any) -> List[str]:
    return sorted(cls.__annotations__)  # a TypedDict's own and its bases' keys


class ServerTest(unittest.TestCase):
    """A test against the server: ``self.client`` (the agent's key) and ``new_workspace()``."""

    def setUp(self) -> None:
        if not URL or not KEY:
            self.skipTest("TOOLSHED_URL and TOOLSHED_KEY name the server under test (npm test sets them)")
        self.client = Toolshed(URL, KEY)
        self._made: List[str] = []

    def tearDown(self) -> None:
        for ws in self._made:
            try:
                self.client.workspaces.delete(ws)
            except Exception:  # noqa: BLE001 - best-effort cleanup; the server's state is thrown away anyway
                pass

    def new_workspace(self, session_id: Optional[str] = None) -> Workspace:
        ws_id = f"py-{uuid.uuid4().hex[:12]}"
        self.client.workspaces.create(ws_id)
        self._made.append(ws_id)
        return self.client.workspace(ws_id, session_id)
