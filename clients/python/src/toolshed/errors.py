"""ToolshedError: what every failed call raises (mirrors lib/client/errors.ts).

Built from the API's error envelope ``{"ok": false, "tool"?, "error": {code, message, details}, "usage"?}``.
An answer that is no envelope at all (a proxy's HTML error page, a cut stream) is
``UNEXPECTED_RESPONSE``, a code only the client makes.
"""
from __future__ import annotations

import json
from email.message import Message
from typing import Any, Dict, Mapping, Optional


class ToolshedError(Exception):
    """A refused or failed call: ``code`` (e.g. "NOT_FOUND"), ``message``, ``details``, HTTP ``status``.

    ``status`` is 202 for NEEDS_INPUT / NEEDS_APPROVAL and 200 when the error came as an SSE result
    event. ``retry_after`` (seconds) is set when the API said when to retry (RATE_LIMITED, an
    Idempotency-Key still running). ``pending_id`` is ``details["pending_id"]`` for held calls.
    """

    def __init__(
        self,
        code: str,
        message: str,
        status: int,
        details: Optional[Dict[str, Any]] = None,
        tool: Optional[str] = None,
        usage: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details: Dict[str, Any] = dict(details or {})
        self.tool = tool
        self.usage = usage
        self.retry_after = retry_after

    @property
    def pending_id(self) -> Optional[str]:
        value = self.details.get("pending_id")
        return value if isinstance(value, str) else None

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.message}"

    def __repr__(self) -> str:
        return f"ToolshedError(code={self.code!r}, status={self.status}, message={self.message!r})"


def is_error_envelope(body: Any) -> bool:
    if not isinstance(body, dict) or body.get("ok") is not False:
        return False
    error = body.get("error")
    return isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("message"), str)


def _retry_after(headers: Optional[Message], details: Mapping[str, Any]) -> Optional[float]:
    raw: Any = headers.get("retry-after") if headers is not None else None
    if raw is None:
        raw = details.get("retry_after")
    try:
        return float(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: Toolshed sends seconds


def error_from_body(body: Any, status: int, content_type: Optional[str], headers: Optional[Message] = None) -> ToolshedError:
    """The error an envelope describes, or UNEXPECTED_RESPONSE when ``body`` is not one."""
    if is_error_envelope(body):
        error = body["error"]
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
        return ToolshedError(
            code=error["code"],
            message=error["message"],
            status=status,
            details=details,
            tool=body.get("tool"),
            usage=body.get("usage"),
            retry_after=_retry_after(headers, details),
        )
    excerpt = body if isinstance(body, str) else json.dumps(body)
    excerpt = excerpt[:200]
    return ToolshedError(
        code="UNEXPECTED_RESPONSE",
        message=(
            f"The server answered HTTP {status} ({content_type or 'no content type'}) without a Toolshed error envelope: "
            f"check that base_url is the Toolshed API root (it serves /openapi.json), then retry. Body starts: {excerpt}"
        ),
        status=status,
        details={"status": status, "content_type": content_type, "excerpt": excerpt},
    )


def error_from_bytes(raw: bytes, status: int, content_type: Optional[str], headers: Optional[Message] = None) -> ToolshedError:
    """A failed response's body (bytes) as a ToolshedError."""
    text = raw.decode("utf-8", errors="replace")
    body: Any = text
    try:
        body = json.loads(text)
    except ValueError:
        pass  # not JSON: reported as UNEXPECTED_RESPONSE with an excerpt
    return error_from_body(body, status, content_type, headers)
