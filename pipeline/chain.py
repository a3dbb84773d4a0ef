"""Per-object processing of a build: normalize -> verify -> categorize -> manifest rows.

Plain functions that run without Prefect: a batch of objects (`batch_outcomes`, what one
Prefect batch task runs) takes each object from the cache (`cached_outcome`) when nothing it
depends on changed and computes the others (`computed_outcome`). Each object's outcome is a
`export.outcome.ObjectOutcome` (its manifest rows, or its rejection), whose decision is cached
by content (`pipeline.cache`): the key is the object's identity (`object_identity`) plus the
sha256 of every file it read. An accepted outcome's `preview` is {"rendered": bool, "detail":
what rendered them or why they were skipped; when rendered, "groups": [[name, label]] of the
joint groups shown and "meshes_left_out": how many meshes MuJoCo refused}.

Stages timed in `seconds` (their sum is the object's time but for small glue): parse (the
adapter reading the source files), convention (reference object, placement, inertial formulas),
meshes (loading, checking, bounding and writing mesh files), inertia (mesh mass properties),
verify, taxonomy, previews (rendering the shipped file), export (the URDF written, manifest rows,
file digests), cache (storing the
outcome, or for a cached object the whole lookup); `total` is the whole object.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import logging
import os
import shutil
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import previews
from export import manifests
from export.digests import canonical_json, sha256_hex
from export.outcome import ObjectOutcome
from normalize import inputs as recorded_inputs
from normalize.discovery import Candidate
from normalize.errors import AssetError, write_failure
from normalize.paths import memoized_realpaths
from normalize.timing import stage_record, timed
from normalize.workers import (
    OBJECT_MEMORY_ENV,
    OBJECT_SECONDS_ENV,
    ObjectTimeout,
    WorkerLost,
    object_limits,
    out_of_memory,
)
from pipeline.cache import MAX_HASH_BYTES, ObjectCache, hash_inputs

logger = logging.getLogger("arena.build")

# Bump when the meaning of a cached outcome changes in a way the code fingerprint cannot see.
PIPELINE_VERSION = "1"

# Rejections caused by reading trouble may be transient: never cache them.
TRANSIENT_CODES = ("file.unreadable", "source.unreadable", "io.error")

# The code whose every change must invalidate cached results (relative to the repository):
# what computing an object runs, and the JSON schemas it validates against. The browser and
# the card (previews/browser.py, card.py) are written at the assembly, from the outcomes, and
# the validate report (report.py) is not a build's, so editing them recomputes nothing.
_FINGERPRINTED = (
    "normalize",
    "verify",
    "taxonomy",
    "previews/__init__.py",
    "previews/gl.py",
    "previews/render.py",
    "metric",
    "pipeline/chain.py",
    "export/manifests.py",
    "export/digests.py",
    "schemas",
)
_REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BatchSettings:
    """What every batch needs; picklable so batches can run in other processes.

    staging: the release staging folder (objects go to `staging/objects/<object_id>/`).
    cache_dir: root of the object cache, or None to recompute everything.
    overrides: curators' category overrides, object_id -> category.
    versions: `current_versions()` taken once at the start of the build, so that every worker
        keys its cache entries alike even if the code is edited during the build.
    """

    staging: Path
    cache_dir: Path | None
    overrides: tuple[tuple[str, str], ...]
    versions: tuple[tuple[str, str], ...]
    object_seconds: float | None = None  # see `normalize.workers.time_limit`
    object_memory: int | None = None  # bytes, see `normalize.workers.memory_limit`
    # parsed meshes and mass properties by content (`mesh_store`); None: in memory only
    mesh_store: Path | None = None


@cache
def _load_stages() -> None:
    """Import the stages, load the taxonomy and usd-core, start SAPIEN's child (when installed),
    once per process."""
    from verify.sapien_process import start_early

    start_early()  # first: SAPIEN's import (1 to 2 s) overlaps the imports below
    import normalize.run  # noqa: F401
    import verify.run  # noqa: F401
    from verify.checks.usd import load_usd

    taxonomy_version()
    load_usd()


# --------------------------------------------------------------------------- versions and keys
@cache
def code_fingerprint() -> str:
    """sha256 over the source and data files of the stages (any edit invalidates the cache)."""
    h = hashlib.sha256()
    for entry in _FINGERPRINTED:
        root = _REPO / entry
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in files:
            if path.is_file() and path.suffix in (".py", ".yaml", ".yml", ".json"):
                h.update(path.relative_to(_REPO).as_posix().encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def convention_version() -> str:
    from normalize.convention import CONVENTION_VERSION

    return str(CONVENTION_VERSION)


@cache
def taxonomy_version() -> str:
    from taxonomy.data import load_taxonomy

    return str(load_taxonomy().version)


def current_versions() -> tuple[tuple[str, str], ...]:
    """Pipeline, code, convention and taxonomy versions, the preview renderer, usd-core and the
    simulators installed, with their versions (a cached result is valid only for the same ones:
    installing a GL backend renders the previews that an earlier build skipped, installing
    usd-core writes the USD files, installing a simulator adds it to the objects' `loads_in`,
    another MuJoCo may find other contacts and so split other convex collision parts)."""
    import importlib.metadata
    import importlib.util

    from normalize.usd_writer import usd_version
    from verify.checks.simulator import LOADERS

    simulators = sorted({m for _, m in LOADERS.values() if importlib.util.find_spec(m) is not None})

    return (
        ("pipeline", PIPELINE_VERSION),
        ("code", code_fingerprint()),
        ("convention", convention_version()),
        ("taxonomy", taxonomy_version()),
        ("previews", previews.backend().identity()),
        ("usd", usd_version() or "not installed"),
        (
            "simulators",
            ",".join(f"{m} {importlib.metadata.version(m)}" for m in simulators) or "none",
        ),
    )


_SOURCE_DIGESTS: dict[int, tuple[object, str]] = {}  # id(source) -> (source, its digest)


def source_digest(source) -> str:
    """sha256 of a source's configuration (`SourceConfig.as_dict()`), computed once per source
    object: with thousands of allowance globs, serializing it for every object of a large
    source cost more than the rest of a cache lookup."""
    known = _SOURCE_DIGESTS.get(id(source))
    if known is None or known[0] is not source:
        known = _SOURCE_DIGESTS[id(source)] = (source, sha256_hex(canonical_json(source.as_dict())))
    return known[1]


def object_identity(
    candidate: Candidate, override: str | None, versions: tuple[tuple[str, str], ...]
) -> str:
    """Everything an object's result depends on except the content of the files it reads."""
    return sha256_hex(
        canonical_json(
            {
                "object_id": candidate.object_id,
                "source_id": candidate.source_id,
                "entry": str(candidate.path),
                "source": source_digest(candidate.source),
                "versions": dict(versions),
                "override": override,
            }
        )
    )


# --------------------------------------------------------------------------- stages
def _verify(result, source, assignment) -> tuple[str, list[str], dict | None, list[str]]:
    """(status, ids of the warnings, failure or None, where it loads: `loads_in`) of a
    normalized object whose category `assignment` is known (fidelity.size reads its size
    range)."""
    from verify import verify_object

    report = verify_object(result, source, assignment=assignment)
    if report.status == "fail":
        failures = report.failures
        return (
            "fail",
            [],
            {
                "code": failures[0].id,
                "message": "; ".join(f"{c.id}: {c.message}" for c in failures),
                "element": failures[0].element,
            },
            [],
        )
    warnings = sorted({c.id for c in report.checks if c.counts and c.severity == "warning"})
    return report.status, warnings, None, report.loads_in


def _with_verification_review(assignment, warnings: list[str]):
    """The assignment, listed for review too when a verification warning asks for it
    (`verify.report.REVIEW_CHECKS`: attachment.axis, fidelity.*)."""
    from verify.report import sends_to_review

    review = [w for w in warnings if sends_to_review(w)]
    if not review:
        return assignment
    reason = "verification warnings to review: " + ", ".join(review)
    return replace(assignment, needs_review=True, reasons=(*assignment.reasons, reason))


def _categorize(obj, candidate: Candidate, overrides: dict[str, str]):
    import taxonomy

    return taxonomy.categorize(
        obj,
        object_id=candidate.object_id,
        source_id=candidate.source_id,
        overrides=overrides,
        source_overrides=candidate.source.overrides,
    )


def _previews(object_dir: Path, object_id: str) -> dict:
    """Render the previews of the object as shipped into `object_dir/preview/`; the outcome's
    "preview" entry. Without a GL backend, or when MuJoCo cannot render this file, the object
    ships without previews and the entry says why."""
    gl = previews.backend()
    if not gl.available:
        return {"rendered": False, "detail": f"skipped: {gl.detail}"}
    folder = object_dir / previews.PREVIEW_FOLDER
    try:
        document = previews.render_object(
            previews.model_file(object_dir), folder, gl.name, title=object_id
        )
    except previews.PreviewError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return {"rendered": False, "detail": f"failed: {exc}"}
    groups = [[g["name"], g["label"]] for g in document["groups"]]
    left_out = len(document["meshes_left_out"])
    return {"rendered": True, "detail": gl.detail, "groups": groups, "meshes_left_out": left_out}


# --------------------------------------------------------------------------- one object
def _base(candidate: Candidate) -> dict:
    return {
        "object_id": candidate.object_id,
        "source": candidate.source.name,
        "source_id": candidate.source_id,
        "source_path": candidate.source_path,
    }


def _rejected(candidate: Candidate, stage, code, message, path=None, element=None) -> ObjectOutcome:
    reject = manifests.reject_row(
        **_base(candidate),
        stage=stage,
        code=code,
        message=message,
        path=path,
        element=element,
    )
    return ObjectOutcome(**_base(candidate), accepted=False, reject=reject)


def _compute(candidate: Candidate, settings: BatchSettings) -> ObjectOutcome:
    """Run the stages on one candidate, each timed into the object's stage record
    (`normalize.timing`); AssetError becomes a rejection."""
    import taxonomy
    from normalize.run import normalize_candidate
    from verify.allowances import with_object_allowances

    if candidate.refusal is not None:  # refused by discovery: nothing to read
        code, message = candidate.refusal
        return _rejected(candidate, "discover", code, message, path=candidate.source_path)
    candidate = with_object_allowances(candidate)
    object_dir = settings.staging / "objects" / candidate.object_id
    try:
        result = normalize_candidate(candidate, settings.staging)
        written = Path(result.urdf_path).parent
        if written.resolve() != object_dir.resolve():
            if object_dir.exists():
                shutil.rmtree(object_dir)
            object_dir.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(written), object_dir)
        urdf_name = Path(result.urdf_path).name

        with timed("taxonomy"):
            assignment = _categorize(result.object, candidate, dict(settings.overrides))
        with timed("verify"):
            status, warnings, failure, loads_in = _verify(result, candidate.source, assignment)
        if failure is not None:
            shutil.rmtree(object_dir, ignore_errors=True)
            return _rejected(
                candidate, "verify", failure["code"], failure["message"], element=failure["element"]
            )
        assignment = _with_verification_review(assignment, warnings)

        with timed("export"):
            assets = manifests.folder_digests(object_dir)
        with timed("previews"):
            preview = _previews(object_dir, candidate.object_id)
        with timed("export"):
            files = assets
            if preview["rendered"]:  # the object's other files are hashed already
                folder = previews.PREVIEW_FOLDER
                shown = manifests.folder_digests(object_dir / folder)
                shown = {f"{folder}/{name}": digest for name, digest in shown.items()}
                files = dict(sorted({**assets, **shown}.items()))
            row = manifests.object_row(
                result.object,
                **_base(candidate),
                license=candidate.source.license,
                source_url=candidate.source.url,
                source_revision=candidate.source.revision,
                object_dir=object_dir,
                files=assets,
                urdf_path=f"objects/{candidate.object_id}/{urdf_name}",
                preview_path=(
                    f"objects/{candidate.object_id}/{previews.PREVIEW_FOLDER}/{previews.SHEET}"
                    if preview["rendered"]
                    else None
                ),
                scale=result.scale,
                assignment={
                    "category": assignment.category,
                    "supercategory": assignment.supercategory,
                    "method": assignment.method,
                    "confidence": assignment.confidence,
                    "needs_review": assignment.needs_review,
                },
                status=status,
                warnings=warnings,
                loads_in=loads_in,
                changes=[c.code for c in result.changes],
                convention_version=convention_version(),
            )
            rows = {
                "objects": [row],
                "joints": manifests.joint_rows(result.object, candidate.object_id),
                "links": manifests.link_rows(result.object, candidate.object_id, object_dir),
                "review": taxonomy.review_rows([assignment]),
            }
        return ObjectOutcome(
            **_base(candidate), accepted=True, rows=rows, files=files, preview=preview
        )
    except AssetError as exc:
        shutil.rmtree(object_dir, ignore_errors=True)
        if out_of_memory(exc):  # see computed_outcome
            raise
        return _rejected(candidate, exc.stage, exc.code, exc.message, exc.path, exc.element)


def hash_limit(source) -> int:
    """The largest input any stage reads from `source`: a larger one is keyed by its size."""
    return max(source.max_file_bytes, MAX_HASH_BYTES)


def _identity(candidate: Candidate, settings: BatchSettings) -> str:
    override = dict(settings.overrides).get(candidate.object_id)
    return object_identity(candidate, override, settings.versions)


def _open_cache(settings: BatchSettings) -> ObjectCache | None:
    return ObjectCache(settings.cache_dir) if settings.cache_dir is not None else None


def cached_outcome(
    candidate: Candidate, settings: BatchSettings, cache: ObjectCache
) -> ObjectOutcome | None:
    """The cached outcome of a candidate whose inputs did not change, with its object folder
    restored into the staging folder; None when it must be computed."""
    if candidate.refusal is not None:  # depends on other candidates: never cached
        return None
    started = time.perf_counter()
    hit = cache.lookup(
        _identity(candidate, settings), candidate.source.path, hash_limit(candidate.source)
    )
    if hit is None:
        return None
    outcome = ObjectOutcome.from_decision(hit.outcome, cached=True, inputs=hit.inputs)
    if outcome.accepted:
        hit.write_files(settings.staging / "objects" / candidate.object_id)
    outcome.seconds = {"cache": time.perf_counter() - started}
    return outcome


def computed_outcome(
    candidate: Candidate, settings: BatchSettings, cache: ObjectCache | None = None
) -> ObjectOutcome:
    """Run the stages on a candidate (and store the outcome in the cache, if given); the
    outcome's `seconds` is the object's own stage record (`normalize.timing`).

    Never raises for a bad asset: AssetError and I/O errors become rejections (an I/O error is
    retried once first); an unexpected exception also becomes a rejection with code
    `internal.error` and `internal_error` set, and is logged with its traceback. A failure of
    the disk written to (`normalize.errors.write_failure`) is no object's: it raises
    `WriteFailed`, which stops the build.
    """
    with stage_record() as seconds:
        return _outcome(candidate, settings, cache, seconds)


def _outcome(
    candidate: Candidate, settings: BatchSettings, cache: ObjectCache | None, seconds: dict
) -> ObjectOutcome:
    from normalize import meshes
    from verify.checks import simulator

    object_dir = settings.staging / "objects" / candidate.object_id
    started = time.perf_counter()
    internal = timed_out = ran_out = False
    staging = str(settings.staging.resolve()) + os.sep
    for attempt in (1, 2):
        with recorded_inputs.recording() as recorded:
            if candidate.path.is_file():
                recorded_inputs.record(candidate.path)
            _load_stages()  # imports and loaded data do not count on the object's clock
            try:
                limits = object_limits(settings.object_seconds, settings.object_memory)
                # one object's files are read and written in a few folders
                with limits, memoized_realpaths():
                    outcome = _compute(candidate, settings)
                break
            except MemoryError:
                shutil.rmtree(object_dir, ignore_errors=True)
                ran_out = True
                outcome = _rejected(
                    candidate,
                    "pipeline",
                    "limits.memory",
                    f"the object needed more than {settings.object_memory / 1024**2:.0f} MiB "
                    f"(the limit of ${OBJECT_MEMORY_ENV}, docs/limits.md); it was stopped",
                )
                _release_memory()
                break
            except ObjectTimeout:
                shutil.rmtree(object_dir, ignore_errors=True)
                timed_out = True
                outcome = _rejected(
                    candidate,
                    "pipeline",
                    "limits.time",
                    f"the object took more than {settings.object_seconds:g} s (the limit of "
                    f"${OBJECT_SECONDS_ENV}, docs/limits.md); it was stopped",
                )
                break
            except OSError as exc:
                failed = write_failure(exc, (settings.staging, settings.cache_dir), object_dir)
                if failed is not None:  # the disk's fault, not the object's: the build stops
                    shutil.rmtree(object_dir, ignore_errors=True)
                    raise failed from exc
                if exc.errno == errno.ENAMETOOLONG:  # the object's names, not a passing fault
                    shutil.rmtree(object_dir, ignore_errors=True)
                    outcome = _rejected(
                        candidate,
                        "ingest",
                        "name.too_long",
                        f"a path is longer than the file system allows: {exc}",
                        path=exc.filename,
                    )
                    break
                if attempt == 1:
                    continue
                shutil.rmtree(object_dir, ignore_errors=True)
                outcome = _rejected(
                    candidate,
                    "ingest",
                    "io.error",
                    f"reading failed twice: {exc}",
                    path=exc.filename,
                )
            except Exception as exc:  # a bug in a stage must not lose the other objects
                logger.warning(
                    "internal error on %s:\n%s", candidate.object_id, traceback.format_exc()
                )
                shutil.rmtree(object_dir, ignore_errors=True)
                internal = True
                outcome = _rejected(
                    candidate, "pipeline", "internal.error", f"{type(exc).__name__}: {exc}"
                )
                break
    simulator.forget_loaded_assets()
    meshes.finish_object()
    inputs = hash_inputs(
        (p for p in recorded if not p.startswith(staging)),
        candidate.source.path,
        hash_limit(candidate.source),
        read=recorded.digests,  # what was processed, even if a file changed since
    )
    reject = outcome.reject
    changed = None in recorded.digests.values()  # a file read twice differed: mixed content
    cacheable = candidate.refusal is None and not (reject and reject["code"] in TRANSIENT_CODES)
    # a slower or smaller machine's verdict is not the object's
    cacheable = cacheable and not changed and not timed_out and not ran_out
    if cache is not None and not internal and cacheable:
        identity = _identity(candidate, settings)
        try:
            with timed("cache"):
                cache.store(identity, inputs, outcome.decision(), object_dir, outcome.files)
        except OSError as exc:
            failed = write_failure(exc, (settings.cache_dir,), settings.cache_dir)
            if failed is None:
                raise
            raise failed from exc
    seconds["total"] = time.perf_counter() - started
    return replace(outcome, inputs=inputs, seconds=seconds, internal_error=internal)


def _release_memory() -> None:
    """After an object ran out of memory: drop what the process keeps across objects (the
    in-memory mesh cache), so the next object starts from the size it would have."""
    from normalize import meshes

    meshes.clear_cache()
    gc.collect()


MESH_CACHE = "meshes"  # folder of the cache root holding parsed meshes and mass properties


def mesh_store(cache_dir: Path | None) -> Path | None:
    """Where a build keeps parsed meshes and mass properties by content: $ARENA_MESH_STORE
    (one store shared by several caches, releases and `arena normalize` runs), else the cache
    root's `meshes` folder; None (memory only) without either. Entries are keyed by the mesh
    bytes and the code, so sharing never serves a stale entry."""
    from normalize.meshes import shared_store

    return shared_store() or (cache_dir / MESH_CACHE if cache_dir is not None else None)


def batch_outcomes(candidates: list[Candidate], settings: BatchSettings) -> Iterator[ObjectOutcome]:
    """The outcome of each candidate in turn: from the cache when its inputs did not change,
    else computed (and stored). What a batch task runs, in a worker process
    (`normalize.workers.Supervisor`) or, on Dask, in the Dask worker. Parsed meshes and mass
    properties are kept in the mesh store by content (`mesh_store`, `normalize.meshes.
    disk_cache`), across objects, worker processes and releases."""
    from normalize import meshes

    cache = _open_cache(settings)
    with meshes.disk_cache(settings.mesh_store):
        for candidate in candidates:
            hit = cached_outcome(candidate, settings, cache) if cache is not None else None
            yield hit if hit is not None else computed_outcome(candidate, settings, cache)


def computed_outcomes(
    candidates: list[Candidate], settings: BatchSettings
) -> Iterator[ObjectOutcome]:
    """The computed outcome of each candidate in turn (never looked up: the cache misses of a
    batch looked up already); see `batch_outcomes`."""
    from normalize import meshes

    cache = _open_cache(settings)
    with meshes.disk_cache(settings.mesh_store):
        for candidate in candidates:
            yield computed_outcome(candidate, settings, cache)


def lost_outcome(candidate: Candidate, settings: BatchSettings, lost: WorkerLost) -> ObjectOutcome:
    """The outcome of a candidate whose worker process died while computing it (`limits.crash`)
    or was killed because the object outlived its wall clock in C code (`limits.time`); never
    cached (another machine, or a rerun, may finish it)."""
    shutil.rmtree(settings.staging / "objects" / candidate.object_id, ignore_errors=True)
    if lost.kind == "time":
        code = "limits.time"
        message = (
            f"the object took more than {settings.object_seconds:g} s (the limit of "
            f"${OBJECT_SECONDS_ENV}, docs/limits.md) inside C code; its worker process was "
            f"{lost.message} and replaced"
        )
    else:
        code = "limits.crash"
        message = (
            f"{lost.message} while it computed the object (docs/limits.md); the process was "
            "replaced and the build went on"
        )
    return _rejected(candidate, "pipeline", code, message)
