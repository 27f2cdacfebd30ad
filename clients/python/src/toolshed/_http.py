"""The one HTTP path of the client: http.client, one connection per request, JSON in and out.

Every request carries ``Authorization: Bearer <key>``; a mutating one carries ``Idempotency-Key``
when the caller passes one. 429 (and CONFLICT) answers that say ``Retry-After`` are retried when
the client allows it (``max_retries``), only while the wait asked for is within ``max_retry_wait``.
"""
from __future__ import annotations

import http.client
import io
import json
import logging
import os
import ssl
import time
from typing import IO, Any, Dict, Mapping, Optional, Union, cast
from urllib.parse import quote, urlencode, urlsplit

from .errors import ToolshedError, error_from_bytes

Body = Union[None, bytes, bytearray, memoryview, str, IO[bytes]]
USER_AGENT = "toolshed-python/0.1.0"
log = logging.getLogger("toolshed")


def path_for_url(path: str) -> str:
    """A workspace path as URL segments: each percent-encoded (UTF-8), the slashes kept."""
    return "/".join(quote(segment, safe="") for segment in path.lstrip("/").split("/"))


def segment(value: str) -> str:
    return quote(value, safe="")


class Response:
    """An answer: status, headers (case-insensitive), and the body, read at once or streamed."""

    def __init__(self, conn: http.client.HTTPConnection, raw: http.client.HTTPResponse) -> None:
        self._conn = conn
        self.raw = raw
        self.status = raw.status
        self.headers = raw.headers

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type") or ""

    def read(self) -> bytes:
        try:
            return self.raw.read()
        finally:
            self.close()

    def json(self) -> Any:
        return json.loads(self.read().decode("utf-8"))

    def close(self) -> None:
        # Closing the socket ends the request: the server cancels a streamed call it still runs.
        self.raw.close()
        self._conn.close()

    def error(self) -> ToolshedError:
        return error_from_bytes(self.read(), self.status, self.headers.get("content-type"), self.headers)


def _length(body: IO[bytes]) -> Optional[int]:
    try:
        return os.fstat(body.fileno()).st_size - body.tell()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass
    try:
        here = body.tell()
        end = body.seek(0, os.SEEK_END)
        body.seek(here)
        return end - here
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


class Transport:
    def __init__(self, base_url: str, api_key: str, timeout: float, max_retries: int, max_retry_wait: float) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL such as http://127.0.0.1:8787, got {base_url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait

    def _connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=ssl.create_default_context(), blocksize=65536)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout, blocksize=65536)

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        body: Body = None,
        json_body: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> Response:
        """Sends one request (retrying 429 / CONFLICT with Retry-After as allowed); any status comes back."""
        url = self.prefix + path
        q = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in (query or {}).items() if v is not None}
        if q:
            url += "?" + urlencode(q)
        h: Dict[str, str] = {"Authorization": f"Bearer {self.api_key}", "User-Agent": USER_AGENT, "Accept": "application/json"}
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            h["Content-Type"] = "application/json"
        elif isinstance(body, str):
            body = body.encode("utf-8")
        if isinstance(body, (bytearray, memoryview)):
            body = bytes(body)
        length: Optional[int] = None
        rewind: Optional[int] = None  # where a file body starts, to send it again after a retry wait
        if isinstance(body, bytes):
            length = len(body)
        elif body is not None:
            length = _length(body)
            if length is None:  # a pipe or socket: the API needs Content-Length (no chunked uploads), so read it
                body = body.read()
                length = len(body)
            else:
                rewind = body.tell()
        if length is not None:
            h["Content-Length"] = str(length)
        elif method in ("POST", "PUT"):
            h["Content-Length"] = "0"
        if idempotency_key is not None:
            h["Idempotency-Key"] = idempotency_key
        h.update(headers or {})
        attempt = 0
        while True:
            conn = self._connect()
            try:
                conn.request(method, url, body=body, headers=h)
                res = Response(conn, conn.getresponse())
            except BaseException:
                conn.close()
                raise
            wait = self._retry_wait(res) if attempt < self.max_retries and res.status in (409, 429) else None
            if wait is None:
                return res
            err = res.error()  # reads and closes
            if wait > self.max_retry_wait or err.code not in ("RATE_LIMITED", "CONFLICT"):
                raise err
            log.info("%s %s answered %s %s; retrying in %s s (retry %d of %d)", method, path, res.status, err.code, wait, attempt + 1, self.max_retries)
            time.sleep(wait)
            if rewind is not None:
                cast(IO[bytes], body).seek(rewind)
            attempt += 1

    @staticmethod
    def _retry_wait(res: Response) -> Optional[float]:
        raw = res.headers.get("retry-after")
        try:
            wait = float(raw) if raw is not None else None
        except ValueError:
            return None
        # CONFLICT with Retry-After 0 means "it ran; read the state instead", never a retry.
        return wait if wait is not None and (wait > 0 or res.status == 429) else None

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """A JSON route: the decoded body, or the ToolshedError its error answer describes."""
        res = self.send(method, path, **kwargs)
        if res.status >= 400:
            raise res.error()
        raw = res.read()
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError:
            raise error_from_bytes(raw, res.status, res.headers.get("content-type"), res.headers) from None
