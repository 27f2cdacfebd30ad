"""Pending calls: ask_user questions and calls held by the approval gate (docs/approvals.md).

Answering needs a key with the ``approve`` scope (not in the default set): the app's key, never
the agent's.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, cast

from ._http import Transport, segment
from .types import PendingCall


class Pending:
    """``ws.pending``: GET/POST /v1/workspaces/{ws}/pending[/{id}]."""

    def __init__(self, http: Transport, ws: str) -> None:
        self._http = http
        self._base = f"/v1/workspaces/{segment(ws)}/pending"

    def list(self) -> List[PendingCall]:
        """The calls waiting for a human, oldest first (at most 100)."""
        return cast(List[PendingCall], self._http.json("GET", self._base)["pending"])

    def get(self, pending_id: str, *, wait: Optional[int] = None) -> PendingCall:
        """One pending call and its outcome; ``wait`` (≤ 30 s) holds the answer until it is decided."""
        return cast(PendingCall, self._http.json("GET", f"{self._base}/{segment(pending_id)}", query={"wait": wait}))

    def _answer(self, pending_id: str, body: Dict[str, Any], idempotency_key: Optional[str]) -> PendingCall:
        return cast(PendingCall, self._http.json("POST", f"{self._base}/{segment(pending_id)}", json_body=body, idempotency_key=idempotency_key))

    def approve(self, pending_id: str, *, modified_args: Optional[Dict[str, Any]] = None, note: Optional[str] = None, idempotency_key: Optional[str] = None) -> PendingCall:
        """Runs the held call now (with ``modified_args`` instead, validated again); its result is in ``outcome``."""
        body: Dict[str, Any] = {"approved": True}
        if modified_args is not None:
            body["modified_args"] = modified_args
        if note is not None:
            body["note"] = note
        return self._answer(pending_id, body, idempotency_key)

    def deny(self, pending_id: str, note: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> PendingCall:
        """Refuses the held call: nothing runs; the agent gets DENIED with the note."""
        body: Dict[str, Any] = {"approved": False}
        if note is not None:
            body["note"] = note
        return self._answer(pending_id, body, idempotency_key)

    def answer(self, pending_id: str, answer: str, *, idempotency_key: Optional[str] = None) -> PendingCall:
        """Answers an ask_user question (one of its options, or free text)."""
        return self._answer(pending_id, {"answer": answer}, idempotency_key)
