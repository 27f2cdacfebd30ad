"""Tool calls: the envelope, the typed helpers (checked against the server's OpenAPI document), sessions, idempotency."""
from __future__ import annotations

import inspect
import uuid
from typing import FrozenSet

from toolshed import BashData, EditData, GlobData, GrepData, LsData, ReadData, ToolResult, Toolshed, ToolshedError, WriteData

from .support import KEY, URL, ServerTest, openapi, typed_dict_keys

HELPERS = {"read": ReadData, "write": WriteData, "edit": EditData, "bash": BashData, "grep": GrepData, "glob": GlobData, "ls": LsData}


class ToolCalls(ServerTest):
    def test_call_answers_the_envelope(self) -> None:
        ws = self.new_workspace()
        wrote = ws.call("write", {"file_path": "src/a.py", "content": "A = 1\n"})
        self.assertIsInstance(wrote, ToolResult)
        self.assertEqual((wrote.ok, wrote.tool, wrote.title), (True, "write", "src/a.py"))
        self.assertTrue(wrote.data["created"])
        self.assertIsInstance(wrote.call_id, str)  # it changed a file: undoable
        self.assertEqual(wrote.usage["bytes_written"], 6)
        self.assertEqual(wrote.raw["output"], wrote.output)
        read = ws.call("read", {"file_path": "src/a.py"})
        self.assertEqual(read.output, "     1\tA = 1")
        self.assertIsNone(read.call_id)  # a read changes nothing
        self.assertEqual(read.data["etag"], wrote.data["etag"])

    def test_helpers_run_the_tools(self) -> None:
        ws = self.new_workspace()
        self.assertTrue(ws.write("pkg/calc.py", "def add(a, b):\n    return a - b\n").data["created"])
        self.assertEqual(ws.read("pkg/calc.py", offset=2, limit=1).output, "     2\t    return a - b")
        edited = ws.edit("pkg/calc.py", "a - b", "a + b")
        self.assertEqual(edited.data["replacements"], 1)
        self.assertIn("+    return a + b", edited.data["diff"])
        grep = ws.grep("a \\+ b", output_mode="content")
        self.assertEqual(grep.data["count"], 1)
        self.assertIn("pkg/calc.py", grep.output)
        self.assertEqual([m["path"] for m in ws.glob("**/*.py").data["matches"]], ["pkg/calc.py"])
        self.assertEqual([e["name"] for e in ws.ls("pkg").data["entries"]], ["calc.py"])
        ran = ws.bash("python3 -c 'from pkg.calc import add; print(add(2, 3))' && echo made > out.txt")
        self.assertEqual((ran.data["exit_code"], ran.data["stdout"]), (0, "5\n"))
        self.assertIn("out.txt", ran.data["files_changed"])
        self.assertEqual(ws.files.get("out.txt").text(), "made\n")

    def test_helpers_match_the_openapi_document(self) -> None:
        paths = openapi()["paths"]
        for tool, data_type in HELPERS.items():
            op = paths[f"/v1/workspaces/{{ws}}/tools/{tool}"]["post"]
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            known, required = set(schema["properties"]), set(schema.get("required", []))
            params = inspect.signature(getattr(type(self.new_workspace_handle()), tool)).parameters
            args = {n: p for n, p in params.items() if n not in ("self", "idempotency_key")}
            self.assertLessEqual(set(args), known, f"{tool}: helper arguments the tool does not take")
            for name in required:
                self.assertIn(name, args, f"{tool}: required argument {name} missing from the helper")
                self.assertIs(args[name].default, inspect.Parameter.empty, f"{tool}: required {name} has a default")
            data = op["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]
            self.assertLessEqual(set(typed_dict_keys(data_type)), set(data["properties"]), f"{tool}: data keys not in the output schema")
            ours: FrozenSet[str] = getattr(data_type, "__required_keys__", frozenset())  # Python 3.9+
            self.assertLessEqual(set(ours), set(data.get("required", [])), f"{tool}: fields the client requires that the tool may leave out")

    def new_workspace_handle(self):  # type: ignore[no-untyped-def]
        return self.client.workspace("unused")

    def test_sessions_keep_their_own_read_records(self) -> None:
        a = self.new_workspace(session_id="agent-a")
        a.write("notes.md", "one\n")
        b = self.client.workspace(a.id, session_id="agent-b")
        with self.assertRaises(ToolshedError) as e:
            b.edit("notes.md", "one", "two")
        self.assertEqual((e.exception.code, e.exception.status), ("NOT_READ", 409))
        b.read("notes.md")
        self.assertEqual(b.edit("notes.md", "one", "two").data["replacements"], 1)

    def test_idempotency_key_replays_the_first_answer(self) -> None:
        ws = self.new_workspace()
        key = str(uuid.uuid4())
        first = ws.write("once.txt", "first\n", idempotency_key=key)
        ws.files.put("once.txt", "changed since\n")
        again = ws.write("once.txt", "first\n", idempotency_key=key)
        self.assertFalse(first.replayed)
        self.assertTrue(again.replayed)
        self.assertEqual(again.data, first.data)
        self.assertEqual(ws.files.get("once.txt").text(), "changed since\n")  # nothing ran twice
        with self.assertRaises(ToolshedError) as e:
            ws.write("once.txt", "other\n", idempotency_key=key)
        self.assertEqual(e.exception.code, "INVALID_ARGUMENT")

    def test_a_retry_waits_for_the_first_request_with_its_key(self) -> None:
        ws = self.new_workspace()
        key, args = str(uuid.uuid4()), {"command": "echo started; sleep 3; echo done >> log.txt; cat log.txt"}
        first = ws.stream("bash", args, idempotency_key=key)
        for event in first:
            if event.text and "started" in event.text:
                break  # it runs: the server holds its key
        with self.assertRaises(ToolshedError) as e:
            ws.bash(args["command"], idempotency_key=key)
        self.assertEqual((e.exception.code, e.exception.status), ("CONFLICT", 409))
        assert e.exception.retry_after is not None
        self.assertGreater(e.exception.retry_after, 0)
        patient = Toolshed(URL, KEY, max_retries=10, max_retry_wait=10).workspace(ws.id)
        with self.assertLogs("toolshed", "INFO") as logs:
            again = patient.bash(args["command"], idempotency_key=key)  # waits as asked, then gets the first answer
        self.assertIn("CONFLICT", logs.output[0])
        self.assertTrue(again.replayed)
        self.assertEqual(again.output, first.result.output)
        self.assertEqual(ws.files.get("log.txt").text(), "done\n")  # it ran once

    def test_tool_definitions_for_a_model(self) -> None:
        tools = {t["name"]: t for t in self.client.tool_definitions("openai")}
        self.assertEqual(tools["edit"]["type"], "function")
        self.assertTrue(tools["edit"]["strict"])
        self.assertIn("old_string", tools["edit"]["parameters"]["properties"])
        own = {t["name"]: t for t in self.client.tool_definitions()}
        self.assertEqual(set(own), set(tools))
