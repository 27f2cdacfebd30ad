"""Pending calls: a held call approved with changed arguments, a denied one, an ask_user question answered."""
from __future__ import annotations

from toolshed import Toolshed, ToolshedError, Workspace

from .support import APPROVE_KEY, URL, ServerTest


class PendingCalls(ServerTest):
    def setUp(self) -> None:
        super().setUp()
        self.app = Toolshed(URL, APPROVE_KEY)  # the app's key: it may approve; the agent's may not

    def held(self, ws: Workspace, tool: str, args: dict) -> ToolshedError:  # type: ignore[type-arg]
        with self.assertRaises(ToolshedError) as e:
            ws.call(tool, args)
        return e.exception

    def test_approve_with_modified_arguments(self) -> None:
        ws = self.new_workspace()
        for p in ("build/keep.txt", "build/tmp/a.o", "build/tmp/b.o"):
            ws.files.put(p, "x")
        asked = {"path": "build", "recursive": True}
        e = self.held(ws, "delete", asked)
        self.assertEqual((e.code, e.status), ("NEEDS_APPROVAL", 202))
        self.assertIsNotNone(e.pending_id)
        assert e.pending_id is not None
        waiting = self.app.workspace(ws.id).pending.list()
        self.assertEqual([(p["id"], p["kind"], p["tool"], p["args"], p["status"]) for p in waiting], [(e.pending_id, "approval", "delete", asked, "pending")])
        with self.assertRaises(ToolshedError) as refused:
            ws.pending.approve(e.pending_id)  # the agent's own key lacks the approve scope
        self.assertEqual((refused.exception.code, refused.exception.status), ("PERMISSION_DENIED", 403))

        answered = self.app.workspace(ws.id).pending.approve(e.pending_id, modified_args={"path": "build/tmp", "recursive": True}, note="only the objects")
        self.assertEqual(answered["status"], "done")
        self.assertEqual(answered["args"], {"path": "build/tmp", "recursive": True})
        self.assertEqual(answered["asked_args"], asked)
        self.assertTrue(answered["outcome"]["ok"])
        # the agent gets the outcome by repeating its call with the pending id: nothing runs again
        result = ws.call("delete", asked, pending_id=e.pending_id)
        self.assertEqual(result.data["approval"]["modified_args"], True)
        self.assertIn("only the objects", result.output)
        self.assertEqual(ws.files.get("build/keep.txt").text(), "x")
        with self.assertRaises(ToolshedError):
            ws.files.get("build/tmp/a.o")
        self.assertEqual(self.app.workspace(ws.id).pending.get(e.pending_id)["status"], "done")

    def test_deny(self) -> None:
        ws = self.new_workspace()
        ws.files.put("src/a/1.txt", "1")
        e = self.held(ws, "delete", {"path": "src", "recursive": True})
        assert e.pending_id is not None
        denied = self.app.workspace(ws.id).pending.deny(e.pending_id, "keep the sources")
        self.assertEqual(denied["outcome"]["code"], "DENIED")
        with self.assertRaises(ToolshedError) as outcome:
            ws.call("delete", {"path": "src", "recursive": True}, pending_id=e.pending_id)
        self.assertEqual((outcome.exception.code, outcome.exception.status), ("DENIED", 403))
        self.assertIn("keep the sources", outcome.exception.message)
        self.assertEqual(ws.files.get("src/a/1.txt").text(), "1")
        with self.assertRaises(ToolshedError) as twice:
            self.app.workspace(ws.id).pending.approve(e.pending_id)
        self.assertEqual(twice.exception.code, "CONFLICT")  # an answer is taken once

    def test_ask_user_answered(self) -> None:
        ws = self.new_workspace()
        e = self.held(ws, "ask_user", {"question": "Which database?", "options": ["postgres", "sqlite"]})
        self.assertEqual((e.code, e.status), ("NEEDS_INPUT", 202))
        assert e.pending_id is not None
        [waiting] = self.app.workspace(ws.id).pending.list()
        self.assertEqual((waiting["kind"], waiting["question"], waiting["options"]), ("input", "Which database?", ["postgres", "sqlite"]))
        self.app.workspace(ws.id).pending.answer(e.pending_id, "sqlite")
        result = ws.call("pending_result", {"pending_id": e.pending_id})
        self.assertIn("sqlite", result.output)
