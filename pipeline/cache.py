"""A content-keyed cache of per-object results.

An object's result (its manifest rows or its rejection, plus its normalized object folder) is
stored under a key made of the object's identity (candidate, source config, code and convention
versions: see `pipeline.chain.object_identity`) and the sha256 of every file the object read
(recorded by `normalize.inputs`). A rebuild looks up the files the object read last time,
re-hashes them and reuses the entry only when every digest matches, so editing one mesh
recomputes exactly the objects that use it.

Layout under the cache root (`default_cache_dir()`):

    v1/index/<id[:2]>/<identity>.json     the inputs the object read last time (path -> digest)
    v1/entries/<key[:2]>/<key>/entry.json the outcome, the file list with digests, a checksum
    v1/entries/<key[:2]>/<key>/files/...  the normalized object folder (hard links to the
                                          release's files when on the same file system)

Every entry carries its own checksum and the digest of every file; an entry that is corrupted
or truncated in any way is discarded and recomputed, never trusted. The checksum is an
HMAC-SHA256 with a key kept outside the cache folder (`key_path`: beside it by default, or
$ARENA_CACHE_KEY_FILE), so an entry edited and re-checksummed by someone who can write the cache
but not the key (a forged license or category, a file list naming `../../x`) is discarded too;
file names of an entry must stay inside it. Writes go to a temporary
name first and are renamed into place, so a killed build leaves no half-written entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import shutil
import stat
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from export.digests import canonical_json, sha256_hex
from normalize.files import kind_of

FORMAT = 1
MISSING = "missing"  # digest of an input that does not exist
NOT_A_FILE = "not-a-file"  # digest of an input path that is a folder or other non-file
UNREADABLE = "unreadable"  # digest of an input that exists but cannot be read
OUTSIDE = "outside-root:"  # + real path: an input leading out of the source root, never opened
NOT_REGULAR = "not-regular:"  # + its kind: a FIFO, device or socket, never opened blocking
OVER_LIMIT = "over-limit:"  # + its size: a file above every read limit, refused unread
MAX_HASH_BYTES = 256 * 1024 * 1024  # the mesh limit (normalize.meshes.MAX_MESH_BYTES)


def default_cache_dir() -> Path:
    """$ARENA_CACHE_DIR, else the user's cache folder (XDG on Linux) / articulate-arena."""
    env = os.environ.get("ARENA_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "articulate-arena"


def input_digest(path: str | os.PathLike, max_bytes: int = MAX_HASH_BYTES) -> str:
    """sha256 of a regular file's content, or a fixed marker when it is missing, a folder or
    unreadable (so that a file appearing or disappearing changes the key). A FIFO or device is
    never read (NOT_REGULAR + its kind), nor a file above `max_bytes`, which the stages refuse
    whatever it holds (OVER_LIMIT + its size: a sparse 100 GB file is not hashed in full)."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return NOT_A_FILE
        if not stat.S_ISREG(st.st_mode):
            return NOT_REGULAR + kind_of(st.st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return MISSING
    except NotADirectoryError:
        return NOT_A_FILE
    except OSError:
        return UNREADABLE
    try:
        st = os.fstat(fd)  # what was opened, in case the path changed since the stat
        if not stat.S_ISREG(st.st_mode):
            return NOT_REGULAR + kind_of(st.st_mode)
        if st.st_size > max_bytes:
            return f"{OVER_LIMIT}{st.st_size}"
        h, total = hashlib.sha256(), 0
        while block := os.read(fd, 1 << 20):
            total += len(block)
            if total > max_bytes:  # grew while hashed
                return f"{OVER_LIMIT}{total}+"
            h.update(block)
        return h.hexdigest()
    except OSError:
        return UNREADABLE
    finally:
        os.close(fd)


def hash_inputs(
    paths,
    root: str | os.PathLike | None = None,
    max_bytes: int = MAX_HASH_BYTES,
    read: Mapping[str, str | None] | None = None,
) -> dict[str, str]:
    """path -> digest for every path (sorted). With `root` (the source root), a path leading
    out of it (an entry that is a symlink to elsewhere) is never opened: its digest is
    OUTSIDE + where it leads, so re-pointing it still changes the key. `max_bytes`: the
    largest file the stages would read (see `input_digest`). `read`: digests of the bytes the
    stages read (`normalize.inputs.Recorded.digests`), used instead of reading those files
    again, so the key holds what was processed."""
    from normalize.paths import memoized_realpaths, realpath

    out = {}
    with memoized_realpaths():  # an object's inputs share a few folders
        inside = None if root is None else realpath(root).rstrip(os.sep) + os.sep
        for path in sorted(str(p) for p in paths):
            real = realpath(path) if inside else None
            if real is not None and not (real + os.sep).startswith(inside):
                out[path] = OUTSIDE + real  # as normalize.paths.is_inside decides
            elif read and read.get(path):
                out[path] = read[path]
            else:
                out[path] = input_digest(path, max_bytes)
    return out


def entry_key(identity: str, inputs: dict[str, str]) -> str:
    return sha256_hex(canonical_json({"identity": identity, "inputs": inputs}))


READ_ONLY = 0o444


def link_or_copy(source: Path, target: Path) -> None:
    """Hard-link `source` to `target` (cheap, same bytes on disk), or copy it when the two are
    on different file systems, and make the file read-only: a cached file may be shared by the
    cache and several releases, so an edit in place (which some editors do on hard-linked
    files) must not silently change them all. A shared file damaged anyway fails its digest on
    the next lookup and is recomputed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    os.chmod(target, READ_ONLY)


@dataclass
class CachedResult:
    """A verified cache entry: the outcome and the object folder's files (name -> path)."""

    outcome: dict
    files: dict[str, Path]
    inputs: dict[str, str]

    def write_files(self, dest: Path) -> None:
        """Recreate the cached object folder at `dest` (replacing what is there)."""
        if not all(safe_name(n) for n in self.files):
            raise CacheCorrupt("a file name leaves the object folder")
        if dest.exists():
            shutil.rmtree(dest)
        dest = str(dest)
        for folder in sorted({os.path.dirname(os.path.join(dest, n)) for n in self.files}):
            os.makedirs(folder, exist_ok=True)
        for name, path in self.files.items():
            target = os.path.join(dest, name)
            try:
                os.link(path, target)  # the stored file is read-only already: so is the link
            except OSError:
                shutil.copyfile(path, target)
                os.chmod(target, READ_ONLY)


class CacheCorrupt(Exception):
    """A cache entry failed its integrity check."""


KEY_ENV = "ARENA_CACHE_KEY_FILE"


def key_path(root: Path) -> Path:
    """Where the cache's HMAC key is kept: $ARENA_CACHE_KEY_FILE, else `.<name>.key` beside
    the cache folder (outside it: whoever may write entries need not be able to read it)."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    root = Path(root).absolute()
    return root.parent / f".{root.name}.key"


def cache_key(root: Path) -> bytes:
    """The cache's HMAC key, made (32 random bytes, mode 0600) on first use; concurrent
    builds agree on one (the first file linked into place wins)."""
    path = key_path(root)
    for _ in range(3):
        try:
            key = bytes.fromhex(path.read_text(encoding="ascii").strip())
            if len(key) >= 32:
                return key
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            raise OSError(f"the cache key {path} is unreadable: {exc}") from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(os.urandom(32).hex())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
        os.unlink(tmp)
    raise OSError(f"the cache key {path} cannot be made")


def safe_name(name: object) -> bool:
    """Whether a file name of an entry stays inside the folder it is relative to."""
    if not isinstance(name, str) or not name or "\0" in name or "\\" in name:
        return False
    parts = name.split("/")
    return not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def entries_since(root: Path, since: float) -> int:
    """How many outcomes the cache under `root` stored at or after `since` (time.time()): what
    an interrupted build leaves for the next one to reuse."""
    entries = Path(root) / f"v{FORMAT}" / "entries"
    count = 0
    with contextlib.suppress(OSError):
        for prefix in os.scandir(entries):
            with contextlib.suppress(OSError):
                count += sum(1 for e in os.scandir(prefix.path) if e.stat().st_mtime >= since)
    return count


class ObjectCache:
    """Per-object results under `root`. Safe for concurrent builds sharing one root."""

    def __init__(self, root: Path):
        self.root = Path(root) / f"v{FORMAT}"
        self.key = cache_key(Path(root))
        self.discarded = 0  # corrupted entries found (and removed) by this instance

    def _checksum(self, body: bytes) -> str:
        return hmac.new(self.key, body, hashlib.sha256).hexdigest()

    # ------------------------------------------------------------------ paths
    def _index_path(self, identity: str) -> Path:
        return self.root / "index" / identity[:2] / f"{identity}.json"

    def _entry_dir(self, key: str) -> Path:
        return self.root / "entries" / key[:2] / key

    # ------------------------------------------------------------------ lookup
    def lookup(
        self, identity: str, root: Path | None = None, max_bytes: int = MAX_HASH_BYTES
    ) -> CachedResult | None:
        """The stored result of this object if every file it read last time still has the
        same content and the entry passes its integrity check; None otherwise. `root`: the
        source root (see `hash_inputs`)."""
        try:
            index = json.loads(self._index_path(identity).read_bytes())
            recorded = list(index["inputs"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        inputs = hash_inputs(recorded, root, max_bytes)
        entry_dir = self._entry_dir(entry_key(identity, inputs))
        if not entry_dir.is_dir():
            return None
        try:
            return self._read_entry(entry_dir, identity, inputs)
        except CacheCorrupt:
            self.discarded += 1
            self._discard(entry_dir)
            return None

    def _read_entry(self, entry_dir: Path, identity: str, inputs: dict) -> CachedResult:
        # entry.json is canonical JSON, so its "checksum" key comes first: the checksum covers
        # exactly the bytes after it, checked without decoding and encoding the entry again.
        head = b'{"checksum":"'
        try:
            data = (entry_dir / "entry.json").read_bytes()
        except OSError as exc:
            raise CacheCorrupt(f"unreadable entry.json: {exc}") from exc
        checksum, rest = data[len(head) : len(head) + 64], data[len(head) + 64 :]
        if not data.startswith(head) or not rest.startswith(b'",'):
            raise CacheCorrupt("entry.json does not start with its checksum")
        body = b"{" + rest[2:]
        if not hmac.compare_digest(self._checksum(body).encode(), checksum):
            raise CacheCorrupt(
                "entry.json checksum mismatch (damaged, or not written with this key)"
            )
        try:
            entry = json.loads(body)
        except ValueError as exc:
            raise CacheCorrupt(f"unreadable entry.json: {exc}") from exc
        if entry.get("format") != FORMAT or entry.get("identity") != identity:
            raise CacheCorrupt("entry belongs to another object or format")
        if entry.get("inputs") != inputs:
            raise CacheCorrupt("entry inputs differ from its key")
        files = {}
        stored = os.path.join(entry_dir, "files")
        for name, digest in entry["files"].items():
            if not safe_name(name):
                raise CacheCorrupt(f"file name {name!r} leaves the entry")
            path = os.path.join(stored, name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as exc:
                raise CacheCorrupt(f"missing file {name}") from exc
            if sha256_hex(data) != digest:
                raise CacheCorrupt(f"file {name} does not match its digest")
            files[name] = Path(path)
        return CachedResult(outcome=entry["outcome"], files=files, inputs=inputs)

    def _discard(self, entry_dir: Path) -> None:
        trash = entry_dir.with_name(f".trash-{uuid.uuid4().hex}")
        with contextlib.suppress(OSError):
            os.rename(entry_dir, trash)
            shutil.rmtree(trash, ignore_errors=True)

    # ------------------------------------------------------------------ store
    def store(
        self,
        identity: str,
        inputs: dict[str, str],
        outcome: dict,
        object_dir: Path | None,
        files: Mapping[str, str],
    ) -> None:
        """Store an outcome and (for accepted objects) a copy of its object folder: `files` is
        the sha256 of each file under `object_dir` by relative name, as the caller computed
        them (`export.manifests.folder_digests`); empty for a rejection. A lookup checks every
        stored file against its digest."""
        key = entry_key(identity, inputs)
        final = self._entry_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".tmp-{uuid.uuid4().hex}"
        try:
            for name in files:
                link_or_copy(Path(object_dir, name), tmp / "files" / name)
            tmp.mkdir(parents=True, exist_ok=True)
            entry = {
                "format": FORMAT,
                "identity": identity,
                "inputs": inputs,
                "outcome": outcome,
                "files": dict(files),
            }
            entry["checksum"] = self._checksum(canonical_json(entry))
            (tmp / "entry.json").write_bytes(canonical_json(entry))
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.is_dir():  # a concurrent build stored the same entry otherwise
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._write_index(identity, inputs)

    def _write_index(self, identity: str, inputs: dict[str, str]) -> None:
        path = self._index_path(identity)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        tmp.write_bytes(canonical_json({"inputs": sorted(inputs)}))
        os.replace(tmp, path)


class ResultStore:
    """Small JSON results by content key under `root`/v1/results/<scope>/ (the duplicate
    stage's pair evidence: `duplicates.stage.EvidenceCache`; the release plots' PNG bytes:
    `taxonomy.stats`), each checksummed with the cache's HMAC key. `scope` (the code
    fingerprint) keeps results of other code apart. A damaged or forged result reads as missing
    and is recomputed."""

    def __init__(self, root: Path, scope: str):
        self.root = Path(root) / f"v{FORMAT}" / "results" / sha256_hex(scope.encode())[:16]
        self.key = cache_key(Path(root))

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            data = self._path(key).read_bytes()
        except OSError:
            return None
        checksum, _, body = data.partition(b"\n")
        expected = hmac.new(self.key, key.encode() + b"\n" + body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected.encode(), checksum):
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None

    def put(self, key: str, value: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = canonical_json(value)
        checksum = hmac.new(self.key, key.encode() + b"\n" + body, hashlib.sha256).hexdigest()
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        tmp.write_bytes(checksum.encode() + b"\n" + body)
        os.replace(tmp, path)
