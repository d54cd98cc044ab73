"""A Hugging Face hub mirror on 127.0.0.1 for the download tests: it serves one model folder, slowly.

It answers what `huggingface_hub` asks a hub at `HF_ENDPOINT` while it downloads a snapshot: the model's
revision (`/api/models/{repo}/revision/{rev}`), its file tree (`/api/models/{repo}/tree/{commit}`), and each
file's metadata and bytes (`HEAD`/`GET /{repo}/resolve/{rev}/{file}`, with `Range` for a resume). Bytes
go out at `bytes_per_s`, so a download lasts long enough for its progress to be seen. `cut_after(n)` drops
the connection once `n` more bytes of a file have gone out and then answers nothing (a network that went
away) until `restore()`. The tests need it because no machine here can reach the real hub; what downloads
from it is the real client. The server, the slow sender and the cut (`FolderMirror`) are shared with
harness/modelscope_mirror.py, which answers ModelScope's client over the same folder.
"""

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self
from urllib.parse import parse_qs, unquote, urlparse

CHUNK = 16 * 1024


class FolderMirror:
    """One model folder's files served on a free loopback port, slowly and cuttably; `answer` is each mirror's
    own: it reads a request and replies with `Reply.json` or `Reply.file`."""

    def __init__(self, folder: Path, bytes_per_s: int = 200_000):
        self.bytes_per_s = bytes_per_s
        self.files = {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}
        self.commit = hashlib.sha1(b"".join(self.files.values())).hexdigest()
        self.sent = 0  # bytes of file bodies sent so far
        self.requests: list[str] = []  # "METHOD path" of each request
        self.resumes: list[tuple[str, int]] = []  # (file, first byte) of each ranged file request
        self.down = False
        self._cut_at: int | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (Reply,), {"mirror": self}))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, reply: "Reply", path: str, query: dict[str, str], body: bool) -> None:
        raise NotImplementedError

    def cut_after(self, more_bytes: int) -> None:
        """Go down once `more_bytes` more bytes of file bodies have been sent."""
        self._cut_at = self.sent + more_bytes

    def restore(self) -> None:
        self.down, self._cut_at = False, None

    def sha256(self, name: str) -> str:
        return hashlib.sha256(self.files[name]).hexdigest()

    def count(self, length: int) -> bool:
        """Count `length` bytes as sent; False when the mirror must go down instead (the cut is reached)."""
        with self._lock:
            if self._cut_at is not None and self.sent + length > self._cut_at:
                self.down = True
                return False
            self.sent += length
            return True


class Reply(BaseHTTPRequestHandler):
    """One request to a `FolderMirror`: recorded, refused while the mirror is down, else handed to its `answer`."""

    protocol_version = "HTTP/1.1"
    mirror: FolderMirror

    def log_message(self, *args) -> None:  # quiet: the tests read `mirror.requests`
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        self.mirror.requests.append(f"{self.command} {self.path}")
        if self.mirror.down:
            return self._hang_up()
        url = urlparse(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        self.mirror.answer(self, unquote(url.path), query, body)

    def json(self, value, status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, text in (headers or {}).items():
            self.send_header(key, text)
        self.end_headers()
        self.wfile.write(data)

    def file(self, name: str, body: bool, headers: dict[str, str] | None = None) -> None:
        """The file's bytes from where `Range: bytes=N-` asks (206), else all of them (200), sent slowly."""
        data = self.mirror.files[name]
        start = int(m.group(1)) if (m := re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))) else 0
        if start:
            self.mirror.resumes.append((name, start))
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(data) - start))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Accept-Ranges", "bytes")
        for key, text in (headers or {}).items():
            self.send_header(key, text)
        self.end_headers()
        if body:
            self._send_slowly(data[start:])

    def _send_slowly(self, data: bytes) -> None:
        for offset in range(0, len(data), CHUNK):
            piece = data[offset:offset + CHUNK]
            if not self.mirror.count(len(piece)):
                return self._hang_up()
            self.wfile.write(piece)
            self.wfile.flush()
            time.sleep(len(piece) / self.mirror.bytes_per_s)

    def _hang_up(self) -> None:
        self.close_connection = True
        self.connection.close()


class HubMirror(FolderMirror):
    def __init__(self, repo_id: str, folder: Path, bytes_per_s: int = 200_000):
        super().__init__(folder, bytes_per_s)
        self.repo_id = repo_id

    def answer(self, reply: Reply, path: str, query: dict[str, str], body: bool) -> None:
        repo, commit = re.escape(self.repo_id), {"X-Repo-Commit": self.commit}
        if re.fullmatch(rf"/api/models/{repo}(/revision/[^/]+)?", path):
            return reply.json({"id": self.repo_id, "modelId": self.repo_id, "sha": self.commit,
                               "siblings": [{"rfilename": name} for name in self.files]}, headers=commit)
        if re.fullmatch(rf"/api/models/{repo}/tree/[^/]+(/.*)?", path):
            return reply.json([{"type": "file", "path": name, "size": len(data),
                                "oid": hashlib.sha1(data).hexdigest()} for name, data in self.files.items()],
                              headers=commit)
        found = re.fullmatch(rf"/{repo}/resolve/[^/]+/(.+)", path)
        if found and found.group(1) in self.files:
            return reply.file(found.group(1), body, headers={"ETag": f'"{self.sha256(found.group(1))}"', **commit})
        reply.json({"error": f"{path} is not on this mirror"}, status=404, headers=commit)
