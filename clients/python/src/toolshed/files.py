"""Raw files: the app's own bytes (not the model's view), binary-safe and ETag-guarded."""
from __future__ import annotations

import shutil
from typing import IO, Any, Dict, Iterable, Optional, Union, cast

from ._http import Transport, path_for_url, segment
from .errors import ToolshedError
from .types import DirectoryListing, DirectoryUploadReport, FileDownload, FileUpload, UploadFile, UploadReport
from .uploads import upload_batch, upload_directory

FileBody = Union[bytes, bytearray, memoryview, str, IO[bytes]]


def _quote_etag(etag: str) -> str:
    return etag if etag.startswith('"') or etag.startswith('W/"') else f'"{etag}"'


def _unquote_etag(etag: str) -> str:
    if etag.startswith("W/"):
        etag = etag[2:]
    return etag[1:-1] if len(etag) >= 2 and etag[0] == etag[-1] == '"' else etag


class Files:
    """``ws.files``: GET / PUT / DELETE /v1/workspaces/{ws}/files/{path} and directory listings."""

    def __init__(self, http: Transport, ws: str) -> None:
        self._http = http
        self._ws = ws

    def _url(self, path: str) -> str:
        return f"/v1/workspaces/{segment(self._ws)}/files/{path_for_url(path)}"

    def get(self, path: str) -> FileDownload:
        """A file's bytes. NOT_FOUND when there is none; IS_DIRECTORY for a directory (``list`` it)."""
        res = self._http.send("GET", self._url(path), headers={"Accept": "*/*"})
        if res.status >= 400:
            raise res.error()
        etag = res.headers.get("etag")
        if etag is None:
            res.close()
            raise ToolshedError("IS_DIRECTORY", f"{path} is a directory: list it with ws.files.list({path!r}).", res.status, {"path": path})
        content = res.read()
        return FileDownload(content=content, etag=_unquote_etag(etag), content_type=res.content_type or "application/octet-stream", size=len(content))

    def download(self, path: str, out: IO[bytes]) -> str:
        """Streams a file into ``out`` (a binary file object); returns its ETag."""
        res = self._http.send("GET", self._url(path), headers={"Accept": "*/*"})
        if res.status >= 400:
            raise res.error()
        etag = res.headers.get("etag")
        try:
            if etag is None:
                raise ToolshedError("IS_DIRECTORY", f"{path} is a directory: list it with ws.files.list({path!r}).", res.status, {"path": path})
            shutil.copyfileobj(res.raw, out, 65536)
        finally:
            res.close()
        return _unquote_etag(etag)

    def put(
        self,
        path: str,
        body: FileBody,
        *,
        if_match: Optional[str] = None,
        create: bool = False,
        content_type: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> FileUpload:
        """Writes a file (str as UTF-8, bytes, or a binary file object, streamed).

        ``if_match``: only over this ETag (else FILE_MODIFIED); ``create``: only if absent (else ALREADY_EXISTS).
        """
        headers = {"Content-Type": content_type or ("text/plain; charset=utf-8" if isinstance(body, str) else "application/octet-stream")}
        if if_match is not None:
            headers["If-Match"] = _quote_etag(if_match)
        if create:
            headers["If-None-Match"] = "*"
        return cast(FileUpload, self._http.json("PUT", self._url(path), headers=headers, body=body, idempotency_key=idempotency_key))

    def upload(self, files: Iterable[UploadFile], *, mode: str = "all", idempotency_key: Optional[str] = None) -> UploadReport:
        """Many files in one request (POST …/uploads): mode "all" writes every file or none (else ToolshedError, nothing written), "each" answers each file on its own."""
        return upload_batch(self._http, self._ws, files, mode, idempotency_key)

    def upload_directory(self, local_dir: str, *, prefix: str = "", mode: str = "all", batch_files: int = 1000, batch_bytes: int = 16 * 1024 * 1024) -> DirectoryUploadReport:
        """The tree below ``local_dir`` (under ``prefix`` in the workspace): regular files in batches of ``batch_files`` / ``batch_bytes``
        (the reports merged), then executable files, symlinks and empty directories in one tar import (``imported``); FIFOs,
        sockets and devices named in ``skipped``."""
        return upload_directory(self._http, self._ws, local_dir, prefix=prefix, mode=mode, batch_files=batch_files, batch_bytes=batch_bytes)

    def delete(self, path: str, *, if_match: Optional[str] = None, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Deletes a file (``if_match``: only this version); a path ending in "/" deletes an empty directory."""
        headers = {"If-Match": _quote_etag(if_match)} if if_match is not None else {}
        return cast(Dict[str, Any], self._http.json("DELETE", self._url(path), headers=headers, idempotency_key=idempotency_key))

    def list(self, directory: str = "", *, recursive: bool = False, cursor: Optional[str] = None, limit: Optional[int] = None) -> DirectoryListing:
        """One page of a directory listing ("" is the root); pass ``cursor`` back for the next."""
        d = path_for_url(directory).rstrip("/")
        url = f"/v1/workspaces/{segment(self._ws)}/files/{d + '/' if d else ''}"
        query = {"cursor": cursor, "limit": limit, "recursive": True if recursive else None}
        return cast(DirectoryListing, self._http.json("GET", url, query=query))
