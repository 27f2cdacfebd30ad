"""Workspace: one workspace's tools, files, archives, versions and pending calls."""
from __future__ import annotations

import json
from typing import IO, Any, Dict, List, Optional, Union, cast

from ._http import Transport, segment
from .errors import error_from_body, is_error_envelope
from .files import Files
from .pending import Pending
from .stream import ToolStream
from .tools import ToolHelpers
from .types import Diff, ImportReport, ToolResult, UndoResult
from .versions import Checkpoints, diff

ArchiveBody = Union[bytes, bytearray, memoryview, IO[bytes]]


class Workspace(ToolHelpers):
    """A handle on workspace ``id`` (no request is made until you call something).

    ``session_id`` is the agent's conversation (``X-Session-Id``): read-before-write records are kept
    per session; ``None`` is the server's "default" session.
    """

    def __init__(self, http: Transport, workspace_id: str, session_id: Optional[str] = None) -> None:
        self._http = http
        self.id = workspace_id
        self.session_id = session_id
        self.files = Files(http, workspace_id)
        self.checkpoints = Checkpoints(http, workspace_id)
        self.pending = Pending(http, workspace_id)
        self._base = f"/v1/workspaces/{segment(workspace_id)}"

    def __repr__(self) -> str:
        return f"Workspace({self.id!r}, session_id={self.session_id!r})"

    def _tool_headers(self, pending_id: Optional[str]) -> Dict[str, str]:
        headers: Dict[str, str] = {}
        if self.session_id is not None:
            headers["X-Session-Id"] = self.session_id
        if pending_id is not None:
            headers["X-Pending-Id"] = pending_id
        return headers

    def call(self, tool: str, args: Optional[Dict[str, Any]] = None, *, pending_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> ToolResult[Any]:
        """Calls ``tool`` with ``args``; returns its success envelope, raises ToolshedError otherwise.

        NEEDS_INPUT / NEEDS_APPROVAL (HTTP 202) are raised too (``e.pending_id``); repeat the call with
        ``pending_id=`` to get its outcome once a human answered.
        """
        res = self._http.send("POST", f"{self._base}/tools/{segment(tool)}", headers=self._tool_headers(pending_id), json_body=args or {}, idempotency_key=idempotency_key)
        if res.content_type.startswith("text/event-stream"):
            # The replay of an Idempotency-Key whose first request was streamed keeps the stream's form.
            return ToolStream(res).result
        replayed = res.headers.get("idempotent-replayed") == "true"
        raw = res.read()
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        if res.status >= 300 or is_error_envelope(body) or not isinstance(body, dict) or body.get("ok") is not True:
            raise error_from_body(body, res.status, res.headers.get("content-type"), res.headers)
        return ToolResult.from_envelope(body, replayed)

    def stream(self, tool: str, args: Optional[Dict[str, Any]] = None, *, pending_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> ToolStream:
        """Calls ``tool`` as a Server-Sent Events stream: iterate for Progress, then ``.result``."""
        headers = {**self._tool_headers(pending_id), "Accept": "text/event-stream"}
        res = self._http.send("POST", f"{self._base}/tools/{segment(tool)}", headers=headers, json_body=args or {}, idempotency_key=idempotency_key)
        return ToolStream(res)

    # archives

    def import_archive(self, archive: ArchiveBody, *, mode: str = "merge", prefix: Optional[str] = None, idempotency_key: Optional[str] = None) -> ImportReport:
        """Imports a tar, tar.gz or zip (bytes, or a binary file object, streamed): ``mode`` "merge" or "replace"."""
        res = self._http.json("POST", f"{self._base}/import", query={"mode": mode, "prefix": prefix}, headers={"Content-Type": "application/octet-stream"}, body=archive, idempotency_key=idempotency_key)
        return cast(ImportReport, res)

    def export(self, path: Optional[str] = None) -> bytes:
        """The workspace (or the directory ``path``) as tar.gz bytes. For large trees, ``export_to``."""
        res = self._http.send("GET", f"{self._base}/export", query={"path": path}, headers={"Accept": "application/gzip"})
        if res.status >= 400:
            raise res.error()
        return res.read()

    def export_to(self, out: IO[bytes], path: Optional[str] = None) -> int:
        """Streams the tar.gz into ``out`` (a binary file object); returns the bytes written."""
        res = self._http.send("GET", f"{self._base}/export", query={"path": path}, headers={"Accept": "application/gzip"})
        if res.status >= 400:
            raise res.error()
        written = 0
        try:
            while True:
                chunk = res.raw.read(65536)
                if not chunk:
                    return written
                out.write(chunk)
                written += len(chunk)
        finally:
            res.close()

    # versions

    def diff(self, from_checkpoint: str, to: Optional[str] = None, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> Diff:
        """Files added, changed and deleted from a checkpoint to another (or ``current``, the default); paged."""
        return diff(self._http, self.id, from_checkpoint, to, cursor=cursor, limit=limit)

    def undo(self, call_id: Optional[str] = None, *, session: Optional[str] = None, idempotency_key: Optional[str] = None) -> UndoResult:
        """Undoes one call (its ``call_id``), or the session's newest; refused whole when a file changed since."""
        body = {k: v for k, v in {"call_id": call_id, "session": session}.items() if v is not None}
        headers = {"X-Session-Id": self.session_id} if self.session_id is not None else {}
        return cast(UndoResult, self._http.json("POST", f"{self._base}/undo", json_body=body, headers=headers, idempotency_key=idempotency_key))

    def undoable(self, *, session: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The session's recent undoable calls, newest first."""
        query = {"session": session if session is not None else self.session_id, "limit": limit}
        return cast(List[Dict[str, Any]], self._http.json("GET", f"{self._base}/undo", query=query)["calls"])


