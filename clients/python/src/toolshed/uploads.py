"""Batch uploads: POST /v1/workspaces/{ws}/uploads (NDJSON, one file per line), used by ``ws.files.upload`` and ``ws.files.upload_directory``."""
from __future__ import annotations

import base64
import json
import os
from typing import Iterable, Iterator, List, Optional, Tuple, Union, cast

from ._http import Transport, segment
from .types import UploadFile, UploadReport

Content = Union[str, bytes]


def upload_line(f: UploadFile) -> bytes:
    """One NDJSON line: text as ``content`` (bytes that are valid UTF-8 too), other bytes as ``content_base64``."""
    content = f["content"]
    line: dict = {"path": f["path"]}
    if isinstance(content, str):
        line["content"] = content
    else:
        try:
            line["content"] = bytes(content).decode("utf-8")
        except UnicodeDecodeError:
            line["content_base64"] = base64.b64encode(bytes(content)).decode("ascii")
    if f.get("if_match") is not None:
        line["if_match"] = f["if_match"]
    if f.get("create"):
        line["create"] = True
    return json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n"


def upload_batch(http: Transport, ws: str, files: Iterable[UploadFile], mode: str = "all", idempotency_key: Optional[str] = None) -> UploadReport:
    body = b"".join(upload_line(f) for f in files)
    return cast(UploadReport, http.json("POST", f"/v1/workspaces/{segment(ws)}/uploads", query={"mode": mode}, headers={"Content-Type": "application/x-ndjson"}, body=body, idempotency_key=idempotency_key))


def walk(local_dir: str) -> Iterator[Tuple[str, str]]:
    """(path inside the tree with "/", path on disk) of every regular file below ``local_dir``, sorted; symlinks are not followed."""
    for root, dirs, names in os.walk(local_dir):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                yield os.path.relpath(full, local_dir).replace(os.sep, "/"), full


def upload_directory(
    http: Transport,
    ws: str,
    local_dir: str,
    *,
    prefix: str = "",
    mode: str = "all",
    batch_files: int = 1000,
    batch_bytes: int = 16 * 1024 * 1024,
) -> UploadReport:
    """Every regular file below ``local_dir`` into the workspace (under ``prefix``), in batches; the reports merged.

    A refused batch (mode "all") raises ToolshedError: the batches before it are written.
    """
    prefix = prefix.strip("/")
    total: UploadReport = {"mode": cast(str, mode), "written": 0, "failed": 0, "bytes": 0, "files": []}  # type: ignore[typeddict-item]
    batch: List[UploadFile] = []
    size = 0

    def send() -> None:
        nonlocal batch, size
        if not batch:
            return
        r = upload_batch(http, ws, batch, mode)
        total["written"] += r["written"]
        total["failed"] += r["failed"]
        total["bytes"] += r["bytes"]
        total["files"].extend(r["files"])
        batch, size = [], 0

    for rel, full in walk(local_dir):
        with open(full, "rb") as fh:
            content = fh.read()
        if len(batch) >= batch_files or (batch and size + len(content) > batch_bytes):
            send()
        batch.append({"path": f"{prefix}/{rel}" if prefix else rel, "content": content})
        size += len(content)
    send()
    return total
