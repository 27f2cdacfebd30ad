"""ToolStream: a tool call over Server-Sent Events, as an iterator of Progress, then its result."""
from __future__ import annotations

import json
from typing import Any, Iterator, Optional

from ._http import Response
from .errors import ToolshedError, error_from_body, is_error_envelope
from .sse import read_sse
from .types import Progress, ToolResult


class ToolStream:
    """Iterate it for the call's progress; ``result`` is its ToolResult once the stream ends.

        with ws.stream("bash", {"command": "make test"}) as stream:
            for event in stream:          # Progress: kind "output" (text) or "status" (message, done, total)
                print(event.text or event.message, end="")
            print(stream.result.data["exit_code"])

    An error result is raised as ToolshedError from the loop (or from ``result``). Leaving early
    (``close()``, or the ``with`` block) ends the request, which cancels the call on the server: a
    command is killed and its file changes are not written back.
    """

    def __init__(self, res: Response) -> None:
        self._res = res
        self._result: Optional[ToolResult[Any]] = None
        self._error: Optional[ToolshedError] = None
        self._events: Optional[Iterator[Progress]] = self._run()

    def _run(self) -> Iterator[Progress]:
        res = self._res
        replayed = res.headers.get("idempotent-replayed") == "true"
        try:
            if not res.content_type.startswith("text/event-stream"):
                # A refusal before the stream started (key, scope, workspace, arguments), or a server
                # (or proxy) that does not stream: no progress, then the whole answer.
                body = res.json() if "json" in res.content_type else None
                if res.status >= 400 or body is None or is_error_envelope(body) or body.get("ok") is not True:
                    raise error_from_body(body if body is not None else "(not JSON)", res.status, res.content_type, res.headers)
                self._result = ToolResult.from_envelope(body, replayed)
                return
            for message in read_sse(res.raw):
                if message.event == "progress":
                    yield Progress.from_json(json.loads(message.data))
                elif message.event == "result":
                    envelope = json.loads(message.data)
                    if is_error_envelope(envelope):
                        raise error_from_body(envelope, res.status, res.content_type, None)
                    self._result = ToolResult.from_envelope(envelope, replayed)
                    return
            raise error_from_body("(the event stream ended without a result event)", res.status, res.content_type)
        except ToolshedError as e:
            self._error = e
            raise
        finally:
            res.close()

    def __iter__(self) -> Iterator[Progress]:
        return self

    def __next__(self) -> Progress:
        if self._events is None:
            raise StopIteration
        try:
            return next(self._events)
        except StopIteration:
            self._events = None
            raise
        except ToolshedError:
            self._events = None
            raise

    @property
    def result(self) -> ToolResult[Any]:
        """The call's result: reads (and drops) what progress is left first; raises its error."""
        for _ in self:
            pass
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise ToolshedError("CANCELLED", "The stream was closed before the call's result arrived; the call was cancelled.", 499)
        return self._result

    def close(self) -> None:
        """Ends the request (and so the call, if it still runs)."""
        if self._events is not None:
            self._events.close()  # type: ignore[attr-defined]
            self._events = None
        self._res.close()

    def __enter__(self) -> "ToolStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
