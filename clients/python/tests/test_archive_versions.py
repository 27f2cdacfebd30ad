"""Import and export (tar bytes and streams), workspaces made from archives and forks, checkpoints, diff, restore, undo."""
from __future__ import annotations

import io
import tarfile
import tempfile
import uuid
from typing import Dict

from toolshed import ToolshedError

from .support import ServerTest


def make_tar(files: Dict[str, bytes], gz: bool = False, executable: str = "") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mode = 0o755 if name == executable else 0o644
            tar.addfile(info, io.BytesIO(content))
        empty = tarfile.TarInfo("empty-dir")
        empty.type = tarfile.DIRTYPE
        empty.mode = 0o755
        tar.addfile(empty)
    return out.getvalue()


def read_tar_gz(data: bytes) -> Dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name.rstrip("/"): (tar.extractfile(m).read() if m.isfile() else b"<dir>") for m in tar.getmembers()}  # type: ignore[union-attr]


FILES = {"src/app.py": b"print('hi')\r\n", "data/blob.bin": bytes(range(256)), "docs/résumé.md": "ünïcode ✓\n".encode()}


class Archives(ServerTest):
    def test_import_then_export(self) -> None:
        ws = self.new_workspace()
        report = ws.import_archive(make_tar(FILES, executable="src/app.py"))
        self.assertEqual((report["format"], report["mode"], report["files"], report["created"]), ("tar", "merge", 3, 3))
        self.assertEqual((report["executable"], report["empty_directories"]), (1, 1))
        self.assertEqual(ws.files.get("data/blob.bin").content, bytes(range(256)))
        exported = read_tar_gz(ws.export())
        for name, content in FILES.items():
            self.assertEqual(exported[name], content, name)
        self.assertEqual(exported["empty-dir"], b"<dir>")
        self.assertEqual(read_tar_gz(ws.export(path="docs")), {"résumé.md": FILES["docs/résumé.md"]})  # names relative to path

    def test_streams_replace_mode_and_prefix(self) -> None:
        ws = self.new_workspace()
        ws.files.put("old.txt", "outside the prefix: kept\n")
        ws.files.put("vendor/stale.txt", "inside the prefix: replaced\n")
        with tempfile.TemporaryFile() as f:
            f.write(make_tar(FILES, gz=True))
            f.seek(0)
            report = ws.import_archive(f, mode="replace", prefix="vendor")
        self.assertEqual((report["format"], report["prefix"]), ("tar.gz", "vendor"))
        self.assertEqual((report["created"], report["deleted"]), (3, 1))
        with self.assertRaises(ToolshedError):
            ws.files.get("vendor/stale.txt")
        self.assertEqual(ws.files.get("old.txt").text(), "outside the prefix: kept\n")
        with tempfile.TemporaryFile() as out:
            written = ws.export_to(out)
            out.seek(0)
            data = out.read()
        self.assertEqual(written, len(data))
        self.assertEqual(read_tar_gz(data)["vendor/src/app.py"], FILES["src/app.py"])

    def test_workspace_from_archive_and_fork(self) -> None:
        ws_id = f"py-{uuid.uuid4().hex[:12]}"
        made = self.client.workspaces.create_from_archive(make_tar(FILES), ws_id)
        self._made.append(ws_id)
        self.assertEqual(made["id"], ws_id)
        self.assertEqual(made["import"]["files"], 3)  # type: ignore[typeddict-item]
        fork_id = f"py-{uuid.uuid4().hex[:12]}"
        self.client.workspaces.create(fork_id, from_workspace=ws_id)
        self._made.append(fork_id)
        fork = self.client.workspace(fork_id)
        fork.files.put("src/app.py", "print('fork')\n")
        self.assertEqual(self.client.workspace(ws_id).files.get("src/app.py").content, FILES["src/app.py"])
        listed = [w["id"] for w in self.client.workspaces.list(limit=100)["workspaces"]]
        self.assertIn(fork_id, listed)
        self.assertEqual(self.client.workspaces.get(fork_id)["id"], fork_id)
        self.assertTrue(self.client.workspaces.delete(fork_id)["deleted"])
        with self.assertRaises(ToolshedError) as e:
            self.client.workspaces.get(fork_id)
        self.assertEqual(e.exception.code, "NOT_FOUND")


class Versions(ServerTest):
    def test_checkpoint_diff_restore_delete(self) -> None:
        ws = self.new_workspace()
        ws.files.put("keep.txt", "v1\n")
        ws.files.put("drop.txt", "bye\n")
        cp = ws.checkpoints.create("before")
        self.assertEqual((cp["name"], cp["files"]), ("before", 2))
        ws.files.put("keep.txt", "v2\n")
        ws.files.delete("drop.txt")
        ws.files.put("new.txt", "hello\n")
        changes = {c["path"]: c for c in ws.diff(cp["id"])["changes"]}
        self.assertEqual({p: c["status"] for p, c in changes.items()}, {"keep.txt": "changed", "drop.txt": "deleted", "new.txt": "added"})
        self.assertIn("+v2", changes["keep.txt"]["diff"])
        cp2 = ws.checkpoints.create("after")
        between = ws.diff(cp["id"], cp2["id"])
        self.assertEqual((between["from"], between["to"]), (cp["id"], cp2["id"]))  # type: ignore[typeddict-item]
        self.assertEqual([c["id"] for c in ws.checkpoints.list()], [cp["id"], cp2["id"]])
        restored = ws.checkpoints.restore(cp["id"])
        self.assertEqual(restored["conflicts"], [])
        self.assertEqual(ws.files.get("keep.txt").text(), "v1\n")
        self.assertEqual(ws.files.get("drop.txt").text(), "bye\n")
        with self.assertRaises(ToolshedError):
            ws.files.get("new.txt")
        self.assertEqual(ws.checkpoints.get(cp2["id"])["name"], "after")
        self.assertTrue(ws.checkpoints.delete(cp2["id"])["deleted"])
        with self.assertRaises(ToolshedError) as e:
            ws.checkpoints.get(cp2["id"])
        self.assertEqual(e.exception.code, "NOT_FOUND")

    def test_undo_one_call(self) -> None:
        ws = self.new_workspace(session_id="undo-session")
        ws.write("u.txt", "before\n")
        ws.read("u.txt")
        edited = ws.edit("u.txt", "before", "after")
        self.assertIn(edited.call_id, [c["call_id"] for c in ws.undoable()])
        undone = ws.undo(edited.call_id)
        self.assertEqual(undone["restored"], [{"path": "u.txt", "action": "restored"}])
        self.assertEqual(ws.files.get("u.txt").text(), "before\n")
