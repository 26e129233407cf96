"""A local stand-in for the Hugging Face hub's file protocol, for download tests without network access.

It serves GET/HEAD /{owner}/{repo}/resolve/{revision}/{file} like huggingface.co does: X-Repo-Commit, ETag (the git
object id, or for LFS files the sha256, also in X-Linked-Etag with X-Linked-Size), Content-Length, Accept-Ranges and
HTTP Range requests answered with 206; unknown repos, revisions and files get 404 with the hub's X-Error-Code.
Faults can be injected per file: drop the connection after N bytes, fail requests after a drop, or serve corrupted
bytes under the true checksum headers. Every request is logged (method, path, Range and Authorization headers).
"""

from __future__ import annotations

import hashlib
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

_PATH = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass
class Faults:
    drop_after: int | None = None  # the next GET sends this many body bytes, then closes the connection
    fail_after_drop: int | None = None  # after a drop, answer GETs with this HTTP status (until faults are cleared)
    corrupt: bool = False  # serve one flipped byte under the true ETag
    dropped: bool = False


@dataclass
class HubFile:
    data: bytes
    lfs: bool
    faults: Faults = field(default_factory=Faults)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def etag(self) -> str:
        if self.lfs:
            return self.sha256
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()


class HubServer:
    """Use as a context manager; `url` is the value for HF_ENDPOINT."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, HubFile]] = {}
        self.commits: dict[str, str] = {}
        self.log: list[dict] = []
        self._httpd: ThreadingHTTPServer | None = None

    def add_file(self, repo: str, filename: str, data: bytes, *, lfs: bool = True) -> HubFile:
        self.repos.setdefault(repo, {})[filename] = f = HubFile(data, lfs)
        state = repo + "".join(f"{n}:{x.sha256}" for n, x in sorted(self.repos[repo].items()))
        self.commits[repo] = hashlib.sha1(state.encode()).hexdigest()  # a new "commit" whenever the repo changes
        return f

    def file(self, repo: str, filename: str) -> HubFile:
        return self.repos[repo][filename]

    def gets(self, repo: str, filename: str) -> list[dict]:
        return [r for r in self.log if r["method"] == "GET" and r["repo"] == repo and r["file"] == filename]

    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "HubServer":
        server = self

        class Handler(_Handler):
            hub = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _error(self, status: int, code: str, commit: str | None = None) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", code)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _serve(self, body: bool) -> None:
        m = _PATH.match(urlsplit(self.path).path)
        rng = self.headers.get("Range")
        entry = {"method": self.command, "path": self.path, "range": rng, "repo": None, "file": None,
                 "auth": self.headers.get("Authorization")}
        self.hub.log.append(entry)
        if not m:
            return self._error(404, "RepoNotFound")
        repo, rev, name = m["repo"], unquote(m["rev"]), unquote(m["file"])
        entry.update(repo=repo, file=name)
        files = self.hub.repos.get(repo)
        if files is None:
            return self._error(404, "RepoNotFound")
        commit = self.hub.commits[repo]
        if rev not in ("main", commit):
            return self._error(404, "RevisionNotFound")
        f = files.get(name)
        if f is None:
            return self._error(404, "EntryNotFound", commit)
        if body and f.faults.dropped and f.faults.fail_after_drop:
            return self._error(f.faults.fail_after_drop, "ServiceUnavailable", commit)

        data = f.data
        if f.faults.corrupt:
            i = len(data) // 2
            data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
        start, end, status = 0, len(data) - 1, 200
        if rng and (r := _RANGE.match(rng)):
            start = int(r[1])
            end = int(r[2]) if r[2] else len(data) - 1
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        chunk = data[start:end + 1]

        self.send_response(status)
        self.send_header("X-Repo-Commit", commit)
        self.send_header("ETag", f'"{f.etag}"')
        if f.lfs:
            self.send_header("X-Linked-Etag", f'"{f.etag}"')
            self.send_header("X-Linked-Size", str(len(f.data)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        if not body:
            return
        drop = f.faults.drop_after
        if drop is not None and not f.faults.dropped and drop < len(chunk):
            f.faults.dropped = True
            self.wfile.write(chunk[:drop])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(chunk)


# ---- pytest fixtures shared by tests/models/ (import them into the test module) ----

import os  # noqa: E402

import pytest  # noqa: E402

TARGET_REPO, TARGET_FILE = "test-org/tiny-target-GGUF", "tiny-target.gguf"
DRAFT_REPO, DRAFT_FILE = "test-org/tiny-draft-GGUF", "tiny-draft.gguf"
OTHER_REPO, OTHER_FILE = "test-org/tiny-other-GGUF", "tiny-other.gguf"


def catalog_toml(pairs: dict[str, tuple[tuple[str, str, bytes], tuple[str, str, bytes]]], default: str,
                 sha256: bool = False) -> str:
    """A models.toml for files served by the test hub: {name: ((repo, file, data), (repo, file, data))}."""
    out = [f'default = "{default}"']
    for name, (t, d) in pairs.items():
        out += [f'[pairs."{name}"]', f'description = "test pair {name}"']
        for role, (repo, file, data) in (("target", t), ("draft", d)):
            out += [f'[pairs."{name}".{role}]', f'repo = "{repo}"', f'file = "{file}"', f"size = {len(data)}",
                    'licence = "apache-2.0"', "context_length = 2048", "verified = true"]
            if sha256:
                out.append(f'sha256 = "{hashlib.sha256(data).hexdigest()}"')
        out += [f'[pairs."{name}".hints]', "draft_max = 4", "memory_mb = 10"]
    return "\n".join(out) + "\n"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty LOCALSPEC_HOME and HF_HOME; no LOCALSPEC_* settings or HF offline flag leaking in from outside."""
    for k in list(os.environ):
        if (k.startswith("LOCALSPEC_") and k != "LOCALSPEC_TEST_CACHE") or k in ("HF_HUB_OFFLINE", "HF_TOKEN"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path / "home"


@pytest.fixture
def hub(monkeypatch):
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


@pytest.fixture
def tiny_hub(hub, home, tiny_pair_paths, tiny_other_vocab, tmp_path, monkeypatch):
    """The hub serving a compatible tiny target/draft pair ("tiny") and an incompatible one ("mismatched")."""
    target, draft = (p.read_bytes() for p in tiny_pair_paths)
    other = tiny_other_vocab.read_bytes()
    hub.add_file(TARGET_REPO, TARGET_FILE, target)
    hub.add_file(DRAFT_REPO, DRAFT_FILE, draft)
    hub.add_file(OTHER_REPO, OTHER_FILE, other)
    cat = tmp_path / "models.toml"
    cat.write_text(catalog_toml({"tiny": ((TARGET_REPO, TARGET_FILE, target), (DRAFT_REPO, DRAFT_FILE, draft)),
                                 "mismatched": ((TARGET_REPO, TARGET_FILE, target),
                                                (OTHER_REPO, OTHER_FILE, other))}, "tiny"))
    monkeypatch.setenv("LOCALSPEC_CATALOG", str(cat))
    return hub


def run_cli(*argv) -> int:
    """The commands exactly as `localspec` runs them (errors: one `error:` line on stderr, exit code 1)."""
    from localspec.cli import main

    return main([str(a) for a in argv])
