"""Raw files: binary, unicode and CRLF round trips, ETag guards, listings, streaming; the types vs the OpenAPI document."""
from __future__ import annotations

import io
import os
import tarfile
import tempfile
import unicodedata

from toolshed import Checkpoint, DirectoryListing, ImportReport, PendingCall, ToolshedError, UploadReport, WorkspaceInfo
from toolshed.types import DirEntry

from .support import ServerTest, openapi, resolve, typed_dict_keys

EVERY_BYTE = bytes(range(256)) * 64


class RawFiles(ServerTest):
    def test_binary_round_trip(self) -> None:
        ws = self.new_workspace()
        up = ws.files.put("bin/all.bytes", EVERY_BYTE)
        self.assertEqual((up["size"], up["created"]), (len(EVERY_BYTE), True))
        got = ws.files.get("bin/all.bytes")
        self.assertEqual(got.content, EVERY_BYTE)
        self.assertEqual((got.etag, got.size), (up["etag"], len(EVERY_BYTE)))
        with self.assertRaises(ToolshedError) as e:
            ws.read("bin/all.bytes")  # the model's view refuses binary; the raw route does not
        self.assertEqual((e.exception.code, e.exception.status), ("BINARY_FILE", 415))

    def test_unicode_names_and_contents(self) -> None:
        ws = self.new_workspace()
        name = "docs/café ünï #1?.md"
        text = "naïve 日本語 🚀\n"
        ws.files.put(name, text)
        self.assertEqual(ws.files.get(name).text(), text)
        # NFC and NFD spellings name one file (the one path function normalizes)
        self.assertEqual(ws.files.get(unicodedata.normalize("NFD", name)).text(), text)
        self.assertEqual(ws.read(unicodedata.normalize("NFD", name)).output, "     1\tnaïve 日本語 🚀")
        names = [e["name"] for e in ws.files.list("docs")["entries"]]
        self.assertEqual(names, [unicodedata.normalize("NFC", "café ünï #1?.md")])

    def test_crlf_survives_raw_and_tool_writes(self) -> None:
        ws = self.new_workspace()
        ws.files.put("win.txt", b"one\r\ntwo\r\n")
        self.assertEqual(ws.read("win.txt").data["line_endings"], "crlf")
        ws.edit("win.txt", "two", "deux")
        self.assertEqual(ws.files.get("win.txt").content, b"one\r\ndeux\r\n")
        ws.write("tool.txt", "a\r\nb\r\n")
        self.assertEqual(ws.files.get("tool.txt").content, b"a\r\nb\r\n")

    def test_if_match_and_create_only(self) -> None:
        ws = self.new_workspace()
        first = ws.files.put("guarded.txt", "v1\n", create=True)
        with self.assertRaises(ToolshedError) as e:
            ws.files.put("guarded.txt", "again\n", create=True)
        self.assertEqual((e.exception.code, e.exception.status), ("ALREADY_EXISTS", 409))
        second = ws.files.put("guarded.txt", "v2\n", if_match=first["etag"])
        self.assertFalse(second["created"])
        with self.assertRaises(ToolshedError) as e:
            ws.files.put("guarded.txt", "lost update\n", if_match=first["etag"])
        self.assertEqual((e.exception.code, e.exception.status), ("FILE_MODIFIED", 409))
        with self.assertRaises(ToolshedError) as e:
            ws.files.delete("guarded.txt", if_match=first["etag"])
        self.assertEqual(e.exception.code, "FILE_MODIFIED")
        self.assertEqual(ws.files.get("guarded.txt").text(), "v2\n")
        self.assertTrue(ws.files.delete("guarded.txt", if_match=second["etag"])["deleted"])
        with self.assertRaises(ToolshedError) as e:
            ws.files.get("guarded.txt")
        self.assertEqual((e.exception.code, e.exception.status), ("NOT_FOUND", 404))

    def test_listing_and_directories(self) -> None:
        ws = self.new_workspace()
        for p in ("a/1.txt", "a/2.txt", "a/b/3.txt"):
            ws.files.put(p, p)
        top = ws.files.list("a")
        self.assertEqual([(e["name"], e["type"]) for e in top["entries"]], [("b", "directory"), ("1.txt", "file"), ("2.txt", "file")])
        deep = ws.files.list("", recursive=True)
        self.assertIn("a/b/3.txt", [e["path"] for e in deep["entries"]])
        names, cursor, pages = [], None, 0
        while True:
            page = ws.files.list("a", limit=1, cursor=cursor)
            names += [e["name"] for e in page["entries"]]
            pages += 1
            cursor = page.get("cursor")
            if cursor is None:
                break
        self.assertGreater(pages, 1)
        self.assertEqual(sorted(names), ["1.txt", "2.txt", "b"])
        with self.assertRaises(ToolshedError) as e:
            ws.files.get("a")
        self.assertEqual(e.exception.code, "IS_DIRECTORY")

    def test_streamed_upload_and_download(self) -> None:
        ws = self.new_workspace()
        big = EVERY_BYTE * 40  # 640 KiB
        with tempfile.TemporaryFile() as f:
            f.write(big)
            f.seek(0)
            self.assertEqual(ws.files.put("big.bin", f)["size"], len(big))
        out = io.BytesIO()
        etag = ws.files.download("big.bin", out)
        self.assertEqual(out.getvalue(), big)
        self.assertEqual(etag, ws.files.get("big.bin").etag)


class BatchUploads(ServerTest):
    def test_upload_directory_in_batches(self) -> None:
        ws = self.new_workspace()
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "src", "deep"))
            files = {"src/a.py": b"print(1)\n", "src/deep/b.txt": "ünï 🚀\n".encode("utf-8"), "bin.dat": EVERY_BYTE, "empty": b""}
            for rel, content in files.items():
                with open(os.path.join(d, *rel.split("/")), "wb") as fh:
                    fh.write(content)
            report = ws.files.upload_directory(d, prefix="repo", batch_files=2)
        self.assertEqual((report["written"], report["failed"]), (4, 0))
        for rel, content in files.items():
            self.assertEqual(ws.files.get(f"repo/{rel}").content, content)

    def test_upload_directory_keeps_execute_bits_links_and_empty_directories(self) -> None:
        ws = self.new_workspace()
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "src", "empty"))
            for rel, content, mode in (("src/run.sh", b"#!/bin/sh\necho hi\n", 0o755), ("src/lib.py", b"X = 1\n", 0o644)):
                path = os.path.join(d, *rel.split("/"))
                with open(path, "wb") as fh:
                    fh.write(content)
                os.chmod(path, mode)
            os.symlink("src/run.sh", os.path.join(d, "run"))
            os.symlink("src", os.path.join(d, "code"))  # a link to a directory
            os.mkfifo(os.path.join(d, "pipe"))
            report = ws.files.upload_directory(d, prefix="repo")
        self.assertEqual((report["written"], report["failed"]), (1, 0))  # lib.py in a batch; run.sh with its mode in the import
        self.assertEqual(report["skipped"], [{"path": "repo/pipe", "reason": "not a regular file, directory or symlink (a FIFO, socket or device): nothing of it can be uploaded"}])
        self.assertIsNotNone(report["imported"])
        with tarfile.open(fileobj=io.BytesIO(ws.export()), mode="r:gz") as tar:
            entries = {m.name.rstrip("/"): m for m in tar.getmembers()}
            self.assertEqual(tar.extractfile(entries["repo/src/run.sh"]).read(), b"#!/bin/sh\necho hi\n")  # type: ignore[union-attr]
        self.assertEqual(entries["repo/src/run.sh"].mode & 0o111, 0o111)
        self.assertEqual(entries["repo/src/lib.py"].mode & 0o111, 0)
        self.assertEqual((entries["repo/run"].issym(), entries["repo/run"].linkname), (True, "src/run.sh"))
        self.assertEqual((entries["repo/code"].issym(), entries["repo/code"].linkname), (True, "src"))
        self.assertTrue(entries["repo/src/empty"].isdir())
        self.assertNotIn("repo/pipe", entries)

    def test_all_or_nothing_and_each(self) -> None:
        ws = self.new_workspace()
        first = ws.files.upload([{"path": "a.txt", "content": "a"}])["files"][0]
        with self.assertRaises(ToolshedError) as e:
            ws.files.upload([{"path": "b.txt", "content": "b"}, {"path": "a.txt", "content": "x", "create": True}])
        self.assertEqual((e.exception.code, e.exception.status), ("ALREADY_EXISTS", 409))
        with self.assertRaises(ToolshedError):
            ws.files.get("b.txt")
        r = ws.files.upload([{"path": "b.txt", "content": "b"}, {"path": "a.txt", "content": "x", "if_match": first["etag"]}, {"path": "c.txt", "content": "c", "if_match": first["etag"]}], mode="each")
        self.assertEqual([f["ok"] for f in r["files"]], [True, True, False])
        self.assertEqual(r["files"][2]["error"]["code"], "FILE_MODIFIED")
        self.assertEqual(ws.files.get("a.txt").text(), "x")


class TypesMatchTheDocument(ServerTest):
    def test_typed_dicts_name_only_fields_the_api_has(self) -> None:
        schemas = openapi()["components"]["schemas"]
        for cls, name in ((WorkspaceInfo, "Workspace"), (Checkpoint, "Checkpoint"), (PendingCall, "PendingCall"), (ImportReport, "ImportReport"), (DirectoryListing, "DirectoryListing"), (UploadReport, "UploadReport")):
            schema = resolve(schemas[name])
            self.assertLessEqual(set(typed_dict_keys(cls)), set(schema["properties"]), name)
            self.assertLessEqual(set(getattr(cls, "__required_keys__", ())), set(schema.get("required", [])), name)
        entry = schemas["DirectoryListing"]["properties"]["entries"]["items"]
        self.assertLessEqual(set(typed_dict_keys(DirEntry)), set(entry["properties"]))
