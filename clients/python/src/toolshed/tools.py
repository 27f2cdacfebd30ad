"""Typed helpers for the common tools (read, write, edit, bash, grep, glob, ls), over ``call``.

Hand-written rather than generated: seven thin methods whose keyword arguments are the tools' own
argument names (the tests check each against the server's OpenAPI document, so they cannot drift),
and ``call(tool, args)`` reaches every tool, the tenant's custom ones included, without them.
Arguments left as ``None`` are not sent (the tool's default applies).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict

from .types import ToolResult


class _ReadRequired(TypedDict):
    file_path: str
    etag: str
    size: int
    modified: str


class ReadData(_ReadRequired, total=False):
    encoding: str
    content_base64: str
    type: str
    start_line: int
    lines_returned: int
    total_lines: int
    truncated: bool
    next_offset: Optional[int]
    line_endings: str


class WriteData(TypedDict):
    file_path: str
    bytes_written: int
    created: bool
    etag: str


class EditData(TypedDict):
    file_path: str
    replacements: int
    created: bool
    etag: str
    diff: str


class BashData(TypedDict, total=False):
    task_id: str
    status: str
    stdout: str
    stderr: str
    exit_code: Optional[int]
    duration_ms: float
    truncated: bool
    files_changed: List[str]
    files_deleted: List[str]
    call_id: str


class _GrepRequired(TypedDict):
    mode: str
    pattern: str
    path: str
    count: int
    total_found: int
    truncated: bool
    next_offset: Optional[int]
    complete: bool


class GrepData(_GrepRequired, total=False):
    matches: List[Dict[str, Any]]
    files: List[str]
    counts: List[Dict[str, Any]]
    resume: Optional[str]


class GlobData(TypedDict):
    matches: List[Dict[str, Any]]  # {path, size, modified}
    count: int
    total_found: int
    truncated: bool
    next_offset: Optional[int]


class LsData(TypedDict, total=False):
    path: str
    type: str
    entries: List[Dict[str, Any]]
    count: int
    truncated: bool
    cursor: Optional[str]
    hidden_skipped: int


def _args(**kwargs: Any) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


class ToolHelpers:
    """Mixed into Workspace: each helper is ``call(<tool>, {…})`` with typed arguments and data."""

    def call(self, tool: str, args: Optional[Dict[str, Any]] = None, *, pending_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> ToolResult[Any]:
        raise NotImplementedError

    def read(self, file_path: str, *, offset: Optional[int] = None, limit: Optional[int] = None, encoding: Optional[str] = None) -> ToolResult[ReadData]:
        return self.call("read", _args(file_path=file_path, offset=offset, limit=limit, encoding=encoding))

    def write(self, file_path: str, content: str, *, encoding: Optional[str] = None, idempotency_key: Optional[str] = None) -> ToolResult[WriteData]:
        return self.call("write", _args(file_path=file_path, content=content, encoding=encoding), idempotency_key=idempotency_key)

    def edit(self, file_path: str, old_string: str, new_string: str, *, replace_all: Optional[bool] = None, idempotency_key: Optional[str] = None) -> ToolResult[EditData]:
        return self.call("edit", _args(file_path=file_path, old_string=old_string, new_string=new_string, replace_all=replace_all), idempotency_key=idempotency_key)

    def bash(
        self,
        command: str,
        *,
        timeout: Optional[int] = None,
        description: Optional[str] = None,
        working_dir: Optional[str] = None,
        run_in_background: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
    ) -> ToolResult[BashData]:
        args = _args(command=command, timeout=timeout, description=description, working_dir=working_dir, run_in_background=run_in_background)
        return self.call("bash", args, idempotency_key=idempotency_key)

    def grep(
        self,
        pattern: str,
        *,
        path: Optional[str] = None,
        glob: Optional[str] = None,
        type: Optional[str] = None,
        output_mode: Optional[str] = None,
        case_insensitive: Optional[bool] = None,
        literal: Optional[bool] = None,
        context: Optional[int] = None,
        head_limit: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> ToolResult[GrepData]:
        args = _args(pattern=pattern, path=path, glob=glob, type=type, output_mode=output_mode, case_insensitive=case_insensitive, literal=literal, context=context, head_limit=head_limit, offset=offset)
        return self.call("grep", args)

    def glob(self, pattern: str, *, path: Optional[str] = None, sort: Optional[str] = None, limit: Optional[int] = None, offset: Optional[int] = None) -> ToolResult[GlobData]:
        return self.call("glob", _args(pattern=pattern, path=path, sort=sort, limit=limit, offset=offset))

    def ls(self, path: Optional[str] = None, *, recursive: Optional[bool] = None, show_hidden: Optional[bool] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> ToolResult[LsData]:
        return self.call("ls", _args(path=path, recursive=recursive, show_hidden=show_hidden, limit=limit, cursor=cursor))
