"""Versions: checkpoints (create, list, get, delete, restore), diff, and undo of one call."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, cast

from ._http import Transport, segment
from .types import Checkpoint, Diff, RestoreResult


class Checkpoints:
    """``ws.checkpoints``: /v1/workspaces/{ws}/checkpoints (docs/versions.md)."""

    def __init__(self, http: Transport, ws: str) -> None:
        self._http = http
        self._base = f"/v1/workspaces/{segment(ws)}/checkpoints"

    def create(self, name: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> Checkpoint:
        """Seals what changed since the last checkpoint; the answer also counts ``sealed`` and ``kept``."""
        body = {"name": name} if name is not None else {}
        return cast(Checkpoint, self._http.json("POST", self._base, json_body=body, idempotency_key=idempotency_key))

    def list(self) -> List[Checkpoint]:
        """The workspace's checkpoints, oldest first."""
        return cast(List[Checkpoint], self._http.json("GET", self._base)["checkpoints"])

    def get(self, checkpoint_id: str) -> Checkpoint:
        return cast(Checkpoint, self._http.json("GET", f"{self._base}/{segment(checkpoint_id)}"))

    def delete(self, checkpoint_id: str, *, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        return cast(Dict[str, Any], self._http.json("DELETE", f"{self._base}/{segment(checkpoint_id)}", idempotency_key=idempotency_key))

    def restore(self, checkpoint_id: str, *, idempotency_key: Optional[str] = None) -> RestoreResult:
        """Makes the workspace that checkpoint again; files concurrent writers changed are in ``conflicts``."""
        return cast(RestoreResult, self._http.json("POST", f"{self._base}/{segment(checkpoint_id)}/restore", idempotency_key=idempotency_key))


def diff(http: Transport, ws: str, from_checkpoint: str, to: Optional[str] = None, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> Diff:
    query = {"from": from_checkpoint, "to": to, "cursor": cursor, "limit": limit}
    return cast(Diff, http.json("GET", f"/v1/workspaces/{segment(ws)}/diff", query=query))
