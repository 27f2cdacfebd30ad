"""toolshed: a Python client for the Toolshed tool API (standard library only).

    from toolshed import Toolshed, ToolshedError
    client = Toolshed("http://127.0.0.1:8787", api_key)
    ws = client.workspace("demo")
    result = ws.call("read", {"file_path": "hello.txt"})   # ToolResult: output, data, call_id, usage

Docs: docs/python-client.md in the Toolshed repository.
"""
from .client import Toolshed, Workspaces
from .errors import ToolshedError
from .files import Files
from .pending import Pending
from .stream import ToolStream
from .tools import BashData, EditData, GlobData, GrepData, LsData, ReadData, WriteData
from .types import (
    Checkpoint,
    Diff,
    DiffChange,
    DirectoryListing,
    DirectoryUploadReport,
    FileDownload,
    FileUpload,
    ImportReport,
    PendingCall,
    Progress,
    RestoreResult,
    ToolResult,
    UndoResult,
    UploadFile,
    UploadReport,
    Usage,
)
from .types import Workspace as WorkspaceInfo
from .versions import Checkpoints
from .workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "BashData", "Checkpoint", "Checkpoints", "Diff", "DiffChange", "DirectoryListing", "DirectoryUploadReport", "EditData", "FileDownload",
    "FileUpload", "Files", "GlobData", "GrepData", "ImportReport", "LsData", "Pending", "PendingCall", "Progress",
    "ReadData", "RestoreResult", "ToolResult", "ToolStream", "Toolshed", "ToolshedError", "UndoResult", "UploadFile", "UploadReport", "Usage",
    "Workspace", "WorkspaceInfo", "Workspaces", "WriteData",
]
