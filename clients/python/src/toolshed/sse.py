"""A small Server-Sent Events reader (the WHATWG event-stream format), as lib/client/sse.ts reads it.

``event:`` and ``data:`` fields, multi-line data joined with "\\n", comments (``: keep-alive``) and
``id:`` / ``retry:`` ignored, one event per blank line, CRLF / LF / CR line ends. No reconnection:
a tool call is not resumable.
"""
from __future__ import annotations

import re
from typing import IO, Iterator, List, NamedTuple

_LINE_END = re.compile(r"\r\n|\n|\r(?!$)")


class SseMessage(NamedTuple):
    event: str
    data: str


def read_sse(stream: IO[bytes]) -> Iterator[SseMessage]:
    """The events of a byte stream, as they arrive (read1: whatever the socket has, never waits for a full buffer)."""
    buffer = ""
    event = ""
    data: List[str] = []
    pending = b""
    read1 = stream.read1 if hasattr(stream, "read1") else stream.read
    while True:
        chunk = read1(65536)
        if not chunk:
            return  # an unterminated last event is not an event
        pending += chunk
        try:
            text = pending.decode("utf-8")
            pending = b""
        except UnicodeDecodeError as e:
            if e.start < len(pending) - 3:
                raise
            text, pending = pending[: e.start].decode("utf-8"), pending[e.start :]  # half a character: wait for more
        buffer += text
        start = 0
        for m in _LINE_END.finditer(buffer):
            line = buffer[start : m.start()]
            start = m.end()
            if line == "":
                if data:
                    yield SseMessage(event or "message", "\n".join(data))
                event, data = "", []
                continue
            if line.startswith(":"):
                continue
            name, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        buffer = buffer[start:]
