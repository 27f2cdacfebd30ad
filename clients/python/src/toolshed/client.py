"""Toolshed: the client's entry point (mirrors lib/client/index.ts's createClient)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Union, cast

from ._http import Transport, segment
from .types import Workspace as WorkspaceInfo
from .types import WorkspaceList
from .workspace import ArchiveBody, Workspace


class Workspaces:
    """``client.workspaces``: create, list, get, delete (POST/GET/DELETE /v1/workspaces)."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def create(
        self,
        workspace_id: Optional[str] = None,
        *,
        name: Optional[str] = None,
        tools: Union[None, str, List[str]] = None,
        from_workspace: Optional[str] = None,
        checkpoint: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> WorkspaceInfo:
        """A new workspace (``workspace_id`` None: a random ws_ id); ``from_workspace`` forks one of yours."""
        body = {k: v for k, v in {"id": workspace_id, "name": name, "tools": tools, "from_workspace": from_workspace, "checkpoint": checkpoint}.items() if v is not None}
        return cast(WorkspaceInfo, self._http.json("POST", "/v1/workspaces", json_body=body, idempotency_key=idempotency_key))

    def create_from_archive(
        self,
        archive: ArchiveBody,
        workspace_id: Optional[str] = None,
        *,
        name: Optional[str] = None,
        prefix: Optional[str] = None,
        tools: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> WorkspaceInfo:
        """A new workspace loaded with a tar, tar.gz or zip in one call (its report under ``"import"``)."""
        query = {"id": workspace_id, "name": name, "prefix": prefix, "tools": tools}
        res = self._http.json("POST", "/v1/workspaces", query=query, headers={"Content-Type": "application/octet-stream"}, body=archive, idempotency_key=idempotency_key)
        return cast(WorkspaceInfo, res)

    def list(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> WorkspaceList:
        """One page (pass ``cursor`` back for the next)."""
        return cast(WorkspaceList, self._http.json("GET", "/v1/workspaces", query={"cursor": cursor, "limit": limit}))

    def get(self, workspace_id: str) -> WorkspaceInfo:
        return cast(WorkspaceInfo, self._http.json("GET", f"/v1/workspaces/{segment(workspace_id)}"))

    def delete(self, workspace_id: str, *, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Deletes the workspace with every file: ``{deleted: True, id, deleted_objects}``."""
        return cast(Dict[str, Any], self._http.json("DELETE", f"/v1/workspaces/{segment(workspace_id)}", idempotency_key=idempotency_key))


class Toolshed:
    """A client of one Toolshed API with one API key.

        client = Toolshed("http://127.0.0.1:8787", os.environ["TOOLSHED_KEY"])
        client.workspaces.create("demo")
        ws = client.workspace("demo")
        ws.write("hello.txt", "hello\\n")
        print(ws.read("hello.txt").output)

    ``session_id``: the default ``X-Session-Id`` of this client's workspaces. ``timeout``: seconds a
    socket waits for data (a tool call may run a 10-minute command). ``max_retries``: how often a
    429, or a CONFLICT that says Retry-After, is sent again after waiting as asked, if the wait is at
    most ``max_retry_wait`` seconds (0: never; the error carries ``retry_after``).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        session_id: Optional[str] = None,
        timeout: float = 660.0,
        *,
        max_retries: int = 0,
        max_retry_wait: float = 30.0,
    ) -> None:
        self._http = Transport(base_url, api_key, timeout, max_retries, max_retry_wait)
        self.session_id = session_id
        self.workspaces = Workspaces(self._http)

    def workspace(self, workspace_id: str, session_id: Optional[str] = None) -> Workspace:
        """A handle on a workspace (no request); ``session_id`` overrides the client's."""
        return Workspace(self._http, workspace_id, session_id if session_id is not None else self.session_id)

    def tool_definitions(self, format: Optional[str] = None) -> List[Dict[str, Any]]:
        """The tools this key may use, for your model: ``format`` "openai", "anthropic", "mcp" or None (Toolshed's own)."""
        return cast(List[Dict[str, Any]], self._http.json("GET", "/v1/tools", query={"format": format})["tools"])


