"""The shapes the API answers, as TypedDicts (what the JSON holds) and dataclasses (what the client adds).

Hand-written from the OpenAPI document (GET /openapi.json) for the routes this client wraps; the
tests check every key named here against the document the server serves, so a renamed field fails
them. Fields the document marks optional are ``total=False`` parts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Literal, Optional, TypedDict, TypeVar, Union, cast


D = TypeVar("D")


class Usage(TypedDict):
    ms: float
    bytes_read: int
    bytes_written: int


@dataclass
class ToolResult(Generic[D]):
    """A tool call's success envelope: ``{ok, tool, title, output, data, call_id?, usage}``.

    ``output`` is the text for the model, ``data`` the same, structured (a dict; typed per tool by
    the helpers). ``call_id`` is set when the call changed files (undo it with ``ws.undo(call_id)``).
    ``replayed`` is true when the answer is the kept answer of an earlier request with the same
    Idempotency-Key (nothing ran again).
    """

    tool: str
    title: str
    output: str
    data: D
    usage: Usage
    call_id: Optional[str] = None
    ok: bool = True
    replayed: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_envelope(cls, body: Dict[str, Any], replayed: bool = False) -> "ToolResult[Any]":
        return cls(
            tool=body["tool"], title=body.get("title", ""), output=body.get("output", ""), data=cast(Any, body.get("data")),
            usage=cast(Usage, body.get("usage") or {"ms": 0, "bytes_read": 0, "bytes_written": 0}), call_id=body.get("call_id"),
            replayed=replayed, raw=body,
        )


@dataclass
class Progress:
    """What a streaming call reports while it runs (lib/contract/tool.ts ProgressEvent).

    ``kind`` "output": ``stream`` ("stdout" | "stderr" | "merged") and ``text``; ``kind`` "status":
    ``message`` and maybe ``done`` / ``total``.
    """

    kind: str
    text: Optional[str] = None
    stream: Optional[str] = None
    message: Optional[str] = None
    done: Optional[float] = None
    total: Optional[float] = None

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Progress":
        return cls(kind=data.get("kind", ""), text=data.get("text"), stream=data.get("stream"), message=data.get("message"), done=data.get("done"), total=data.get("total"))


@dataclass
class FileDownload:
    """A raw file: its bytes, ETag (unquoted), content type and size."""

    content: bytes
    etag: str
    content_type: str
    size: int

    def text(self, encoding: str = "utf-8") -> str:
        return self.content.decode(encoding)


class FileUpload(TypedDict):
    path: str
    size: int
    etag: str
    created: bool


class _UploadFileRequired(TypedDict):
    path: str
    content: Union[str, bytes]


class UploadFile(_UploadFileRequired, total=False):
    """One file of a batch upload: ``if_match`` (only over that version) or ``create`` (only if absent)."""

    if_match: str
    create: bool


class UploadReport(TypedDict):
    """POST …/uploads: ``files`` holds each file's result ({path, ok: True, etag, size, created} or {path, ok: False, error})."""

    mode: str
    written: int
    failed: int
    bytes: int
    files: List[Dict[str, Any]]


class SkippedEntry(TypedDict):
    path: str
    reason: str


class DirectoryUploadReport(UploadReport):
    """``ws.files.upload_directory``: the batches' report merged; ``imported``: the report of the tar import that carried
    executable files, symlinks and empty directories (None when the tree had none); ``skipped``: entries nothing can carry."""

    imported: Optional["ImportReport"]
    skipped: List[SkippedEntry]


class _DirEntryRequired(TypedDict):
    name: str
    path: str
    type: Literal["file", "directory", "symlink"]


class DirEntry(_DirEntryRequired, total=False):
    size: int
    etag: str
    modified: str
    target: str


class _DirectoryListingRequired(TypedDict):
    path: str
    entries: List[DirEntry]


class DirectoryListing(_DirectoryListingRequired, total=False):
    cursor: str


class _WorkspaceRequired(TypedDict):
    id: str
    name: str
    created_at: str


class Workspace(_WorkspaceRequired, total=False):
    base: Optional[str]
    seq: int
    checkpoint: str
    tools: Union[str, List[str]]
    # a workspace created from an archive also has "import": ImportReport (a keyword in Python)


class WorkspaceList(TypedDict, total=False):
    workspaces: List[Workspace]
    cursor: str


class _CheckpointRequired(TypedDict):
    id: str
    name: str
    workspace: str
    manifest: str
    created_at: str
    files: int
    bytes: int


class Checkpoint(_CheckpointRequired, total=False):
    exec: List[str]
    links: Dict[str, str]


class RestoreResult(TypedDict):
    checkpoint: Checkpoint
    removed: int
    conflicts: List[str]


class _DiffChangeRequired(TypedDict):
    path: str
    status: Literal["added", "changed", "deleted"]


# "from" is a keyword: the functional form.
DiffExecutable = TypedDict("DiffExecutable", {"from": bool, "to": bool})
"""The execute bit on each side, on a change where it differs."""


class DiffChange(_DiffChangeRequired, total=False):
    from_etag: str
    to_etag: str
    size: int
    diff: str
    binary: bool
    executable: DiffExecutable


class _DiffRequired(TypedDict):
    changes: List[DiffChange]


class Diff(_DiffRequired, total=False):
    # "from" on the wire is a Python keyword: read it as diff["from"]
    to: str
    cursor: str


class UndoResult(TypedDict):
    call_id: str
    tool: str
    restored: List[Dict[str, str]]  # {path, action: "restored" | "deleted" | "recreated"}


class ImportReport(TypedDict):
    workspace: str
    format: Literal["tar", "tar.gz", "zip"]
    mode: Literal["merge", "replace"]
    prefix: str
    entries: int
    files: int
    bytes: int
    created: int
    updated: int
    deleted: int
    links_deleted: int
    links_replaced: int
    kept: List[str]
    kept_count: int
    directories: int
    empty_directories: int
    symlinks: int
    executable: int
    skipped: List[Dict[str, str]]
    skipped_count: int
    message: str
    ms: float


class _PendingCallRequired(TypedDict):
    id: str
    kind: Literal["input", "approval"]
    tool: str
    args: Dict[str, Any]
    session: str
    status: Literal["pending", "running", "done", "expired", "superseded", "stale"]
    created_at: str
    expires_at: str


class PendingCall(_PendingCallRequired, total=False):
    question: str
    options: List[str]
    reason: str
    answer: Dict[str, Any]
    asked_args: Dict[str, Any]
    closed: Dict[str, str]
    outcome: Dict[str, Any]  # {ok: True, title, output, data} or {ok: False, code, message, details}
