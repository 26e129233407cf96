"""Download one file from the Hugging Face hub (or the mirror at HF_ENDPOINT): resumable, disk-checked, verified.

Built from huggingface_hub's own pieces (hf_hub_url, get_hf_file_metadata, build_hf_headers, http_get), so HF_ENDPOINT,
HF_TOKEN, proxies and the hub's error codes behave as in every other hub client. hf_hub_download itself is not used
because it throws away a partial download when the process stops (recent huggingface_hub); a model is gigabytes, so
here the partial file is kept as "<file>.part" and the next pull continues it with an HTTP Range request.

The finished file is hashed before it gets its final name: sha256 against the catalog value, or else against the hub's
LFS ETag (which is the file's sha256). A mismatch deletes the download. Only then is the .part renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal
from urllib.parse import urlparse

from filelock import FileLock
from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import http_get
from huggingface_hub.utils import build_hf_headers
from huggingface_hub.utils import tqdm as hf_tqdm

from localspec.errors import DownloadError
from localspec.models.catalog import format_mb
from localspec.private_files import open_append, replace_file

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
DISK_MARGIN = 64 * 1024 * 1024  # keep this much free after a download: a full disk breaks everything else too
_HASH_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class Progress:
    """Reported to a progress callback: bytes done of total (None while unknown) in the current phase."""

    repo: str
    file: str
    phase: Literal["download", "verify"]
    done: int
    total: int | None


ProgressCallback = Callable[[Progress], None]


class DownloadCancelled(DownloadError):
    """The caller's cancel event was set; the partial file is kept and the next pull resumes it."""


@dataclass(frozen=True)
class Downloaded:
    path: Path
    size: int
    sha256: str
    commit: str | None


def _truthy(v: str | None) -> bool:
    return (v or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def hub_offline(flag: bool = False) -> bool:
    """--offline, HF_HUB_OFFLINE now, or HF_HUB_OFFLINE when huggingface_hub was imported."""
    return flag or _truthy(os.environ.get("HF_HUB_OFFLINE")) or bool(constants.HF_HUB_OFFLINE)


def hub_endpoint() -> str:
    """HF_ENDPOINT read at call time (huggingface_hub reads it once, at import)."""
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def check_disk_space(folder: Path, need: int, what: str) -> None:
    """Refuse (DownloadError) when `need` bytes plus a margin do not fit on the disk holding `folder`."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if need > 0 and free < need + DISK_MARGIN:
        raise DownloadError(f"not enough disk space for {what}: needs {format_mb(need + DISK_MARGIN)}, "
                            f"{format_mb(free)} free in {probe}")


def _explain(e: BaseException, repo: str, file: str, revision: str | None) -> str:
    where = f"{repo}/{file}" + (f"@{revision[:12]}" if revision else "")
    if isinstance(e, GatedRepoError):
        return f"{repo} is gated: accept its licence on the hub, then set HF_TOKEN"
    if isinstance(e, RepositoryNotFoundError):
        return f"repository {repo} not found on {hub_endpoint()} (private? set HF_TOKEN)"
    if isinstance(e, RevisionNotFoundError):
        return f"revision {revision} not found in {repo}"
    if isinstance(e, RemoteEntryNotFoundError):
        return f"{file} not found in {repo}" + (f"@{revision}" if revision else "")
    if isinstance(e, OfflineModeIsEnabled):
        return f"offline (HF_HUB_OFFLINE is set): cannot download {where}"
    if isinstance(e, HfHubHTTPError):
        return f"hub error for {where}: {str(e).splitlines()[0]}"
    return f"cannot reach {hub_endpoint()} for {where}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


def _bar_class(repo: str, file: str, progress: ProgressCallback | None, cancel: threading.Event | None,
               show: bool) -> type:
    """A tqdm class for http_get that also feeds the callback and honours cancellation between chunks."""

    class _Bar(hf_tqdm):
        def __init__(self, *args, **kwargs):
            if not show:
                kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self._done = int(kwargs.get("initial") or 0)
            self._of = kwargs.get("total")
            self._emit()

        def update(self, n=1):
            if cancel is not None and cancel.is_set():
                raise DownloadCancelled(f"download of {repo}/{file} cancelled; pull again to resume")
            self._done += n
            self._emit()
            return super().update(n)

        def _emit(self):
            if progress is not None:
                progress(Progress(repo, file, "download", self._done, self._of))

    return _Bar


def _digest(path: Path, repo: str, file: str, progress: ProgressCallback | None,
            cancel: threading.Event | None) -> tuple[str, str]:
    """(sha256, git-blob sha1) of a file, reporting the "verify" phase."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    sha1 = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)  # git object id: ETag of non-LFS files
    done = 0
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            if cancel is not None and cancel.is_set():
                raise DownloadCancelled(f"verification of {repo}/{file} cancelled; pull again to finish it")
            sha256.update(chunk)
            sha1.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(Progress(repo, file, "verify", done, size))
    return sha256.hexdigest(), sha1.hexdigest()


def lock_path(dest: Path) -> Path:
    """Serializes concurrent pulls of one file (hidden, next to it)."""
    return dest.with_name(f".{dest.name}.lock")


def _read_tag(tag: Path) -> dict | None:
    try:
        return json.loads(tag.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def download_file(repo: str, file: str, dest: Path, *, revision: str | None = None, sha256: str | None = None,
                  progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
                  show_progress: bool = False) -> Downloaded:
    """Fetch repo/file to `dest`; resume a kept partial; verify; raise DownloadError (one line) on any failure."""
    endpoint = hub_endpoint()
    url = hf_hub_url(repo, file, revision=revision, endpoint=endpoint)
    try:
        # No retries here: with no network, fail in a second rather than after ~25 s of backoff.
        meta = get_hf_file_metadata(url, endpoint=endpoint, retry_on_errors=False)
    except Exception as e:  # every failure becomes one actionable line
        raise DownloadError(_explain(e, repo, file, revision)) from None
    if not meta.commit_hash or not meta.etag:
        raise DownloadError(f"{endpoint} did not answer like a Hugging Face hub for {repo}/{file} "
                            "(no X-Repo-Commit/ETag header); check HF_ENDPOINT")
    etag = meta.etag.lower()
    expected = sha256 or (etag if _SHA256.match(etag) else None)
    git_oid = etag if expected is None and _SHA1.match(etag) else None
    total = meta.size

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    tag = dest.with_name(dest.name + ".part.json")  # which version the .part belongs to
    with FileLock(str(lock_path(dest))):
        if dest.exists() and total is not None and dest.stat().st_size == total and expected:
            # A complete file whose registry entry was lost (crash between rename and record): check, do not refetch.
            got, _ = _digest(dest, repo, file, progress, cancel)
            if got == expected:
                return Downloaded(dest, total, got, meta.commit_hash)
        if part.exists() and _read_tag(tag) != {"etag": etag, "size": total}:
            part.unlink()  # a partial of another version (or of unknown origin) cannot be continued
        have = part.stat().st_size if part.exists() else 0
        if total is not None and have > total:
            part.unlink()
            have = 0
        check_disk_space(dest.parent, (total or 0) - have, f"{repo}/{file}")
        replace_file(tag, json.dumps({"etag": etag, "size": total}).encode("utf-8"))

        headers = build_hf_headers()  # HF_TOKEN or the stored login, as huggingface_hub decides
        headers["Accept-Encoding"] = "identity"
        location = meta.location or url
        if urlparse(location).netloc != urlparse(url).netloc:
            headers.pop("authorization", None)  # a signed CDN URL must not receive the hub token
        try:
            with open_append(part, binary=True) as f:  # never through a link planted at the .part name
                http_get(location, f, resume_size=have, headers=headers, expected_size=total,
                         displayed_filename=file, tqdm_class=_bar_class(repo, file, progress, cancel, show_progress))
        except DownloadCancelled:
            raise
        except Exception as e:
            kept = part.stat().st_size if part.exists() else 0
            if total is not None and kept > total:
                part.unlink()
                kept = 0
            what = f"{repo}/{file}"
            detail = str(e).splitlines()[0] if str(e) else type(e).__name__
            status = getattr(getattr(e, "response", None), "status_code", None)
            if isinstance(e, HfHubHTTPError) and status is not None:
                detail = f"HTTP {status}"
            raise DownloadError(f"download of {what} interrupted ({detail}); {format_mb(kept)} kept, "
                                "run the same pull again to resume") from None

        got, got_oid = _digest(part, repo, file, progress, cancel)
        if (expected and got != expected) or (git_oid and got_oid != git_oid):
            part.unlink(missing_ok=True)
            tag.unlink(missing_ok=True)
            want = expected or git_oid or ""
            kind = "sha256" if expected else "git object id"
            raise DownloadError(f"checksum mismatch for {repo}/{file}: expected {kind} {want[:16]}…, got "
                                f"{(got if expected else got_oid)[:16]}…; the download was deleted")
        os.replace(part, dest)
        tag.unlink(missing_ok=True)
    return Downloaded(dest, dest.stat().st_size, got, meta.commit_hash)
