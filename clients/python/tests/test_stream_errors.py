"""SSE streaming (progress, then the result; errors; leaving early kills the command) and errors with their codes, retries."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from toolshed import Progress, Toolshed, ToolshedError

from .support import LIMITED_KEY, URL, ServerTest


class Streaming(ServerTest):
    def test_bash_output_arrives_before_the_result(self) -> None:
        ws = self.new_workspace()
        seen = []
        with ws.stream("bash", {"command": "echo first; sleep 2; echo second"}) as stream:
            for event in stream:
                self.assertIsInstance(event, Progress)
                seen.append((event.kind, event.text))
            result = stream.result
        self.assertEqual(result.output, "first\nsecond\n")
        self.assertEqual(result.data["exit_code"], 0)
        self.assertEqual("".join(t or "" for k, t in seen if k == "output"), "first\nsecond\n")
        self.assertEqual(seen[0], ("output", "first\n"))  # sent while the command still slept, before "second" existed

    def test_result_without_a_loop_and_errors(self) -> None:
        ws = self.new_workspace()
        ws.files.put("a.txt", "needle\n")
        self.assertEqual(ws.stream("grep", {"pattern": "needle"}).result.data["count"], 1)
        with self.assertRaises(ToolshedError) as e:
            for _ in ws.stream("read", {"file_path": "missing.txt"}):
                pass
        self.assertEqual((e.exception.code, e.exception.status), ("NOT_FOUND", 200))  # the stream's result event
        with self.assertRaises(ToolshedError) as e:
            self.client.workspace("py-no-such-workspace").stream("read", {"file_path": "a.txt"}).result
        self.assertEqual((e.exception.code, e.exception.status), ("NOT_FOUND", 404))  # refused before the stream

    def test_closing_the_stream_kills_the_command(self) -> None:
        ws = self.new_workspace()
        marker = f"sleep 37.{os.getpid()}"
        stream = ws.stream("bash", {"command": f"echo started; {marker}; echo changed > late.txt"})
        for event in stream:
            if event.text and "started" in event.text:
                break
        self.assertTrue(running(marker))
        stream.close()
        deadline = time.monotonic() + 30
        while running(marker) and time.monotonic() < deadline:
            time.sleep(0.25)
        self.assertFalse(running(marker), "the sandboxed command outlived the closed stream")
        with self.assertRaises(ToolshedError):
            ws.files.get("late.txt")


def running(pattern: str) -> bool:
    """Whether a process with ``pattern`` in its command line runs here (the sandbox's pids are nested in ours)."""
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


class Errors(ServerTest):
    def test_codes_statuses_and_details(self) -> None:
        ws = self.new_workspace()
        ws.write("a.py", "x = 1\n")
        with self.assertRaises(ToolshedError) as e:
            ws.read("b.py")
        err = e.exception
        self.assertEqual((err.code, err.status, err.tool), ("NOT_FOUND", 404, "read"))
        self.assertEqual(err.details["similar"], ["a.py"])
        self.assertIn("Did you mean: a.py", err.message)
        self.assertIn("ms", err.usage or {})
        with self.assertRaises(ToolshedError) as e:
            ws.edit("a.py", "y = 2", "y = 3")
        self.assertEqual((e.exception.code, e.exception.status), ("NO_MATCH", 422))
        with self.assertRaises(ToolshedError) as e:
            ws.call("read", {"file_path": "a.py", "ofset": 2})
        self.assertEqual((e.exception.code, e.exception.status), ("INVALID_ARGUMENT", 400))
        self.assertIn("Did you mean 'offset'", e.exception.message)
        with self.assertRaises(ToolshedError) as e:
            ws.call("no_such_tool", {})
        self.assertEqual(e.exception.code, "NOT_FOUND")
        with self.assertRaises(ToolshedError) as e:
            ws.read("../../etc/passwd")
        self.assertEqual(e.exception.code, "INVALID_PATH")

    def test_bad_key_and_not_toolshed(self) -> None:
        with self.assertRaises(ToolshedError) as e:
            Toolshed(URL, "tsk_nope_nope").workspaces.list()
        self.assertEqual((e.exception.code, e.exception.status), ("UNAUTHORIZED", 401))
        server = HTTPServer(("127.0.0.1", 0), HtmlErrorPage)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with self.assertRaises(ToolshedError) as e:
                Toolshed(f"http://127.0.0.1:{server.server_port}", "k").workspace("w").read("a.txt")
            self.assertEqual((e.exception.code, e.exception.status), ("UNEXPECTED_RESPONSE", 502))
            self.assertIn("<html>bad gateway", e.exception.message)
        finally:
            server.shutdown()
            server.server_close()

    def test_rate_limited_then_retried_after_retry_after(self) -> None:
        limited = Toolshed(URL, LIMITED_KEY)  # calls_per_minute 60: one call back per second

        def use_up() -> ToolshedError:
            for _ in range(200):
                try:
                    limited.workspaces.list(limit=1)
                except ToolshedError as e:
                    return e
            self.fail("60 calls per minute were never used up")

        err = use_up()
        self.assertEqual((err.code, err.status), ("RATE_LIMITED", 429))
        assert err.retry_after is not None
        self.assertGreater(err.retry_after, 0)
        impatient = Toolshed(URL, LIMITED_KEY, max_retries=5, max_retry_wait=0.5)
        use_up()
        with self.assertRaises(ToolshedError) as e:
            impatient.workspaces.list(limit=1)  # asks to wait longer than allowed: raised at once
        self.assertEqual(e.exception.code, "RATE_LIMITED")
        patient = Toolshed(URL, LIMITED_KEY, max_retries=5, max_retry_wait=10)
        use_up()
        with self.assertLogs("toolshed", "INFO") as logs:
            self.assertIn("workspaces", patient.workspaces.list(limit=1))
        self.assertIn("RATE_LIMITED", logs.output[0])


class HtmlErrorPage(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        body = b"<html>bad gateway</html>"
        self.send_response(502)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass
