"""Batch uploads: POST /v1/workspaces/{ws}/uploads (NDJSON, one file per line), used by ``ws.files.upload`` and ``ws.files.upload_directory``.

A batch line carries a file's bytes and nothing else, so ``upload_directory`` sends what a line
cannot carry (execute bits, symlinks, empty directories) in one tar import after the batches, and
names what neither can (FIFOs, sockets, devices) in its report: nothing of the tree is dropped silently.
"""
from __future__ import annotations

import base64
import io
import json
import os
import stat
import tarfile
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple, Union, cast

from ._http import Transport, segment
from .types import DirectoryUploadReport, ImportReport, UploadFile, UploadReport

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


NOT_UPLOADABLE = "not a regular file, directory or symlink (a FIFO, socket or device): nothing of it can be uploaded"


class Tree(NamedTuple):
    """What ``local_dir`` holds, paths inside it with "/", sorted."""

    files: List[Tuple[str, str]]  # (path, path on disk): regular files without the owner's execute bit, for the batches
    executables: List[Tuple[str, str]]  # regular files with it, for the import
    links: List[Tuple[str, str]]  # (path, target), never followed
    empty_dirs: List[str]
    others: List[str]  # FIFOs, sockets, devices


def walk(local_dir: str) -> Tree:
    tree = Tree([], [], [], [], [])
    for root, dirs, names in os.walk(local_dir):
        dirs.sort()
        rel_root = os.path.relpath(root, local_dir).replace(os.sep, "/")
        rel = (lambda n: n) if rel_root == "." else (lambda n: f"{rel_root}/{n}")
        if rel_root != "." and not dirs and not names:
            tree.empty_dirs.append(rel_root)
        for name in sorted(dirs + names):
            full = os.path.join(root, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                tree.links.append((rel(name), os.readlink(full)))
            elif stat.S_ISREG(st.st_mode):
                (tree.executables if st.st_mode & stat.S_IXUSR else tree.files).append((rel(name), full))
            elif not stat.S_ISDIR(st.st_mode):
                tree.others.append(rel(name))
    return tree


def _tree_tar(tree: Tree) -> bytes:
    """The executables, links and empty directories of ``tree`` as one tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in tree.empty_dirs:
            info = tarfile.TarInfo(path)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, full in tree.executables:
            with open(full, "rb") as fh:
                data = fh.read()
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for path, target in tree.links:
            info = tarfile.TarInfo(path)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(info)
    return buf.getvalue()


def upload_directory(
    http: Transport,
    ws: str,
    local_dir: str,
    *,
    prefix: str = "",
    mode: str = "all",
    batch_files: int = 1000,
    batch_bytes: int = 16 * 1024 * 1024,
) -> DirectoryUploadReport:
    """The tree below ``local_dir`` into the workspace (under ``prefix``): its regular files in batches, the reports merged;
    then, in one tar import (mode merge), what a batch line cannot carry: executable files with their execute bit,
    symlinks (never followed) and empty directories (``imported``: its report, None when there was nothing of these).
    FIFOs, sockets and devices are named in ``skipped``.

    A refused batch (mode "all") raises ToolshedError: the batches before it are written, the import is not made.
    """
    prefix = prefix.strip("/")
    under = (lambda p: f"{prefix}/{p}") if prefix else (lambda p: p)
    tree = walk(local_dir)
    total: DirectoryUploadReport = {"mode": cast(str, mode), "written": 0, "failed": 0, "bytes": 0, "files": [], "imported": None, "skipped": []}  # type: ignore[typeddict-item]
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

    for rel, full in tree.files:
        with open(full, "rb") as fh:
            content = fh.read()
        if len(batch) >= batch_files or (batch and size + len(content) > batch_bytes):
            send()
        batch.append({"path": under(rel), "content": content})
        size += len(content)
    send()
    if tree.executables or tree.links or tree.empty_dirs:
        query: Dict[str, Optional[str]] = {"mode": "merge", "prefix": prefix or None}
        total["imported"] = cast(ImportReport, http.json("POST", f"/v1/workspaces/{segment(ws)}/import", query=query, headers={"Content-Type": "application/x-tar"}, body=_tree_tar(tree)))
    total["skipped"] = [{"path": under(p), "reason": NOT_UPLOADABLE} for p in tree.others]
    return total
