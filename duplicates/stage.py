"""The duplicate stage: candidate pairs, evidence, decisions, clusters and the canonical member.

`find_duplicates(records, settings)` takes every accepted object (`keys.ObjectRecord`) and
returns the clusters, the duplicates-table rows and the objects to move out:

1. cheap keys propose candidate pairs (`keys.candidate_pairs`, `keys.cheap_match`);
2. each surviving pair is measured (`measure`): the size ratio, E_tree after each quarter yaw
   and that scale at the yaws a cheap joint test leaves (`motion.could_agree`, no file read),
   then the shape distance (`shape`) at the yaws where the motion agrees, from each object's
   signature (read once per object, only for objects of pairs left then); when no quarter turn
   gives a duplicate and the boxes allow a turn by any angle, the same at the yaw of any angle
   the surfaces give (`_at_any_yaw`);
3. a pair is a duplicate when the motion agrees ("same", or "welded": the same joints with
   some fixed) and the shapes agree (Chamfer <= SHAPE_TOLERANCE at a unit-factor size ratio);
   or when both are built of the same mesh files (`mesh_match`: MESH_SHARE of the smaller
   object's mesh uses and files byte-identical at one unit-factor scale, stock shapes not
   counted) and their rest shapes agree within POSED_TOLERANCE, whatever the joints say (a
   re-shipped object whose joints were re-typed, re-limited or whose door frame was turned);
4. curator overrides (`settings.same`, `settings.distinct`) win over evidence and are recorded
   as the decision (`override.same`, `override.distinct`);
5. union-find over the duplicate pairs (overrides first, then by shape distance; a pair that
   would join two objects declared distinct is not joined) gives the clusters;
6. the canonical member of a cluster is the first by: source priority (`settings.priority`, the
   order of the sources file), more moving joints, status pass before warn, object_id.

A cluster's id is its canonical member's object_id (an object alone is its own cluster), so a
canonical object keeps its split (`export.selection.split_of(cluster_id)`) when copies of it are
found. Nothing is lost: with handling "keep" (default) every member stays in the release,
flagged by is_canonical; with "move_out" the others become rejects with code `duplicate.of`
naming the canonical id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import metric
from duplicates import keys, motion, shape
from normalize.meshes import trim_cache

HANDLINGS = ("keep", "move_out")
PROCESSES = 2  # worker processes measuring pairs (the evidence does not depend on the order)
PROCESS_PAIRS = 2000  # fewer pairs are measured in the stage's own process: no worker start
BATCHES_PER_PROCESS = 4  # batches of pair-graph components per worker (they differ in cost)
MESH_SHARE = keys.MESH_SHARE
STOCK_VERTICES = 100  # a mesh with fewer vertices (a box, a cylinder) is no evidence of identity


@dataclass(frozen=True)
class DuplicateSettings:
    """handling: "keep" or "move_out"; priority: source names, best first; same / distinct:
    curator overrides as (object_id, object_id) pairs."""

    handling: str = "keep"
    priority: tuple[str, ...] = ()
    same: tuple[tuple[str, str], ...] = ()
    distinct: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.handling not in HANDLINGS:
            raise ValueError(f"duplicates must be one of {', '.join(HANDLINGS)}")


@dataclass(frozen=True)
class PairEvidence:
    a: str
    b: str
    keys: tuple[str, ...]
    shape_distance: float | None = None
    yaw: float | None = None  # degrees: a quarter turn, else any angle (`shape.any_yaw_alignment`)
    scale_ratio: float | None = None
    motion: motion.MotionEvidence | None = None
    same_meshes: bool = False
    duplicate: bool = False
    decision: str = "distinct"  # duplicate, distinct, override.same, override.distinct


@dataclass
class DuplicateResult:
    cluster_of: dict[str, str]  # object_id -> cluster id (its canonical member's id)
    rows: list[dict]  # the duplicates table
    moved_out: dict[str, str]  # object_id -> canonical id (handling "move_out")
    evidence: list[PairEvidence] = field(default_factory=list)  # every measured pair
    measured: int = 0  # pairs measured by this run (the others came from the cache)

    def is_canonical(self, object_id: str) -> bool:
        return self.cluster_of.get(object_id, object_id) == object_id


# --------------------------------------------------------------------------- evidence
class _Signatures:
    """Each object's shape signature (`shape.signature`), read once and only for objects that
    need it, and dropped once the last of its `pairs` is measured (`done`): a signature is
    about 1.3 MB (its samples and their search tree), and a 20,000-object stage that kept
    them all ran past 17 GB."""

    def __init__(self, records: dict[str, keys.ObjectRecord], pairs):
        self.records = records
        self.known: dict[str, shape.Signature] = {}
        self.meshes = shape.MeshCache()
        self.left = Counter(object_id for pair in pairs for object_id in pair)

    def done(self, pair: tuple[str, str]) -> None:
        """The pair is measured: drop the signatures no other pair needs."""
        for object_id in pair:
            self.left[object_id] -= 1
            if self.left[object_id] <= 0:
                self.known.pop(object_id, None)

    def __getitem__(self, object_id: str) -> shape.Signature:
        if object_id not in self.known:
            r = self.records[object_id]
            meshes = self.meshes.of(dict(r.mesh_files))
            self.known[object_id] = shape.signature(r.urdf, r.diagonal, meshes=meshes)
            trim_cache()  # the process keeps no more parsed meshes than after an object
        return self.known[object_id]

    def stock(self, *object_ids: str) -> set[str]:
        """Digests of the objects' mesh files with fewer than STOCK_VERTICES vertices."""
        out = set()
        for object_id in object_ids:
            digests = dict(self.records[object_id].mesh_files)
            for name, count in self[object_id].vertices.items():
                if count < STOCK_VERTICES and name in digests:
                    out.add(digests[name])
        return out


class _Joints:
    """Each object's joint tree (lengths in metres, as the table holds them) and its
    `motion.invariants`, built once per object."""

    def __init__(self):
        self.trees: dict[str, metric.Tree] = {}
        self.invariants: dict[str, np.ndarray] = {}

    def tree(self, r: keys.ObjectRecord) -> metric.Tree:
        if r.object_id not in self.trees:
            self.trees[r.object_id] = motion.joint_tree(r.joints)
        return self.trees[r.object_id]

    def invariants_of(self, r: keys.ObjectRecord) -> np.ndarray:
        if r.object_id not in self.invariants:
            self.invariants[r.object_id] = motion.invariants(r.joints)
        return self.invariants[r.object_id]


def mesh_match(a, b, uses_a, uses_b, common, stock=None) -> float | None:
    """The size factor f when B uses the same mesh files as A, each scaled f times as much
    (MESH_SHARE of the smaller object's mesh uses and of its distinct files; f a unit factor),
    else None. Files whose digest is in `common` (held by many objects) or `stock` (simple
    shapes: fewer than STOCK_VERTICES vertices, such as a box) are no evidence and do not
    count."""
    digest_a, digest_b = dict(a.mesh_files), dict(b.mesh_files)
    uses_a = [(digest_a.get(name), scale) for name, scale in uses_a]
    uses_b = [(digest_b.get(name), scale) for name, scale in uses_b]
    uses_a = [(d, s) for d, s in uses_a if d is not None and d not in common]
    uses_b = [(d, s) for d, s in uses_b if d is not None and d not in common]
    if stock is not None:
        uses_a = [(d, s) for d, s in uses_a if d not in stock]
        uses_b = [(d, s) for d, s in uses_b if d not in stock]
    smaller = min(len(uses_a), len(uses_b))
    distinct_a, distinct_b = {d for d, _ in uses_a}, {d for d, _ in uses_b}
    fewer = min(len(distinct_a), len(distinct_b))
    if smaller < 2 or len(distinct_a & distinct_b) < max(2, MESH_SHARE * fewer):
        return None
    first_b = {}
    for digest, scale in uses_b:
        first_b.setdefault(digest, scale)
    ratios = Counter(round(first_b[d] / s, 6) for d, s in uses_a if d in first_b and s > 0)
    if not ratios:
        return None
    factor = min(ratios, key=lambda r: (-ratios[r], r))
    if keys.unit_factor(factor) is None:
        return None
    shared = Counter((d, round(s * factor, 6)) for d, s in uses_a) & Counter(
        (d, round(s, 6)) for d, s in uses_b
    )
    return factor if sum(shared.values()) >= MESH_SHARE * smaller else None


def _motions(a, b, joints: _Joints, ratio: float, yaws, full=True) -> dict:
    """yaw -> E_tree evidence of A turned by the yaw and scaled by `ratio` against B, lengths
    in B's box diagonals (`motion.in_lengths`); without `full`, only for the yaws that pass
    the cheap necessary test `motion.could_agree`."""
    unit = max(b.diagonal, 1e-12)
    tree_b = motion.in_lengths(joints.tree(b), unit)
    out = {}
    for y in yaws:
        tree_a = motion.in_lengths(joints.tree(a), unit, shape.yaw_matrix(y), ratio)
        if full or motion.could_agree(tree_a, tree_b):
            out[y] = motion.motion_evidence(tree_a, tree_b)
    return out


def measure(
    a: keys.ObjectRecord,
    b: keys.ObjectRecord,
    signatures: _Signatures,
    joints: _Joints,
    common=frozenset(),
    full: bool = False,
):
    """The evidence on one pair and whether it is a duplicate (before overrides). The cheap
    evidence first: the keys, then the joints' turn-free invariants
    (`motion.could_agree_any_yaw`) and E_tree (no file read) at the yaws a cheap test leaves,
    which decides which yaws are worth a shape distance; files are read (once per object) only
    for pairs left then. Quarter turns when the boxes agree at one (key "extents"; a quarter
    turn keeps the box); when they find no duplicate and the boxes allow a turn by another
    angle (key "height") but not a quarter turn, any yaw (`_at_any_yaw`), where the boxes must
    agree once A is turned (key "turned_extents"). `full`: E_tree at every quarter turn even
    when no yaw can agree (an overridden pair's row shows its evidence). `signatures`,
    `joints`: the stage run's per-object caches."""
    worth, matched = keys.cheap_match(a, b)
    evidence = PairEvidence(a.object_id, b.object_id, tuple(matched))
    if not worth:
        return evidence
    mesh_factor = None
    if len((a.mesh_digests & b.mesh_digests) - common) >= 2:
        sig_a, sig_b = signatures[a.object_id], signatures[b.object_id]
        stock = signatures.stock(a.object_id, b.object_id)
        mesh_factor = mesh_match(a, b, sig_a.uses, sig_b.uses, common, stock)
    found = _at_quarter_turns(a, b, signatures, joints, mesh_factor, evidence, full)
    if found.duplicate or "height" not in matched or "extents" in matched:
        return found  # boxes that agree at a quarter turn were measured at the right yaw
    turned = _at_any_yaw(a, b, signatures, joints, mesh_factor, evidence)
    return turned if turned is not None and turned.duplicate else found


def _at_quarter_turns(a, b, signatures, joints, mesh_factor, evidence, full) -> PairEvidence:
    """The evidence at the quarter turns about z (the boxes centred on one axis)."""
    if mesh_factor is not None:  # the same parts: sizes compare through the mesh scales
        sig_a, sig_b = signatures[a.object_id], signatures[b.object_id]
        size = a.diagonal * mesh_factor / max(b.diagonal, 1e-12)
        distances = shape.shape_distances(sig_a.sample, sig_b.sample, size)
        yaw = min(shape.YAWS, key=lambda y: (distances[y], y))
        kin = _motions(a, b, joints, mesh_factor, [yaw])[yaw]
        duplicate = distances[yaw] <= shape.POSED_TOLERANCE
        return replace(
            evidence,
            shape_distance=distances[yaw],
            yaw=yaw,
            scale_ratio=mesh_factor,
            motion=kin,
            same_meshes=True,
            duplicate=duplicate,
            decision="duplicate" if duplicate else "distinct",
        )
    ratio = b.diagonal / max(a.diagonal, 1e-12)
    length = max(a.diagonal * ratio, b.diagonal)
    if keys.unit_factor(ratio) is None:
        return replace(evidence, scale_ratio=ratio)
    if not full and (
        "extents" not in evidence.keys
        or not motion.could_agree_any_yaw(
            joints.invariants_of(a), joints.invariants_of(b), ratio, length
        )
    ):
        return replace(evidence, scale_ratio=ratio)
    kins = _motions(a, b, joints, ratio, shape.YAWS, full)
    agreeing = [y for y in kins if kins[y].relation in ("same", "welded")]
    if not agreeing:
        if not kins:  # no yaw can agree: E_tree not computed
            return replace(evidence, scale_ratio=ratio)
        yaw = min(kins, key=lambda y: (kins[y].e_tree, y))
        return replace(evidence, yaw=yaw, scale_ratio=ratio, motion=kins[yaw])
    sample_a, sample_b = signatures[a.object_id].sample, signatures[b.object_id].sample
    distances = shape.shape_distances(sample_a, sample_b, yaws=agreeing)
    yaw = min(agreeing, key=lambda y: (distances[y], kins[y].e_tree, y))
    duplicate = distances[yaw] <= shape.SHAPE_TOLERANCE and "extents" in evidence.keys
    return replace(
        evidence,
        shape_distance=distances[yaw],
        yaw=yaw,
        scale_ratio=ratio,
        motion=kins[yaw],
        duplicate=duplicate,
        decision="duplicate" if duplicate else "distinct",
    )


def _at_any_yaw(a, b, signatures, joints, mesh_factor, evidence) -> PairEvidence | None:
    """The evidence at the yaw of any angle that brings A's surface closest to B's
    (`shape.any_yaw_alignment`, surface centroids put together: a turned box is centred
    elsewhere): sizes compare through the mesh scales (the same parts) or the heights; None
    when the joints cannot agree at any yaw (`motion.could_agree_any_yaw`, no file read) or
    the surfaces do not spread alike (`shape.spreads_agree`). Unless both are built of the
    same mesh files, a duplicate's boxes agree within keys.EXTENT_TOLERANCE once A is turned
    (`shape.box_at_yaw`), as the boxes of a quarter turn must."""
    ratio = mesh_factor or keys.turned_match(a, b)
    length = max(a.diagonal * ratio, b.diagonal)
    if mesh_factor is None and not motion.could_agree_any_yaw(
        joints.invariants_of(a), joints.invariants_of(b), ratio, length
    ):
        return None
    sample_a, sample_b = signatures[a.object_id].sample, signatures[b.object_id].sample
    size = ratio * a.diagonal / max(b.diagonal, 1e-12)  # A's scale-free points in B's units
    if mesh_factor is None and not shape.spreads_agree(sample_a, sample_b, size):
        return None
    tolerance = shape.SHAPE_TOLERANCE if mesh_factor is None else shape.POSED_TOLERANCE
    found = shape.any_yaw_alignment(sample_a, sample_b, size, enough=tolerance)
    boxes = np.abs(shape.box_at_yaw(sample_a, found.yaw, size) - shape.box_at_yaw(sample_b, 0))
    matched = evidence.keys + (("turned_extents",) if boxes.max() <= keys.EXTENT_TOLERANCE else ())
    # E_tree at the surfaces' yaw and shift (in B's box diagonals): exact for one surface
    # turned (its principal axes and centroid are), and what tells a joint moved against the
    # same surface apart
    unit = max(b.diagonal, 1e-12)
    tree_a = motion.in_lengths(
        joints.tree(a), unit, shape.yaw_matrix(found.yaw), ratio, found.shift * unit
    )
    kin = motion.motion_evidence(tree_a, motion.in_lengths(joints.tree(b), unit))
    duplicate = found.distance <= tolerance and (
        mesh_factor is not None
        or (kin.relation in ("same", "welded") and "turned_extents" in matched)
    )
    return replace(
        evidence,
        keys=matched,
        shape_distance=found.distance,
        yaw=found.yaw,
        scale_ratio=ratio,
        motion=kin,
        same_meshes=mesh_factor is not None,
        duplicate=duplicate,
        decision="duplicate" if duplicate else "distinct",
    )


def _measure_batch(records, pairs, common, overridden) -> list[PairEvidence]:
    """The evidence on `pairs` (sorted) of `records`, each object read at most once."""
    by_id = {r.object_id: r for r in records}
    signatures, joints = _Signatures(by_id, pairs), _Joints()
    out = []
    for pair in pairs:
        full = frozenset(pair) in overridden
        out.append(measure(by_id[pair[0]], by_id[pair[1]], signatures, joints, common, full))
        signatures.done(pair)
    return out


def _batches(pairs: list[tuple[str, str]], count: int) -> list[list[tuple[str, str]]]:
    """The pairs in at most `count` batches that share no object (whole connected components
    of the pair graph, the largest first onto the batch with fewest pairs), each sorted."""
    ids = sorted({i for pair in pairs for i in pair})
    index = {object_id: k for k, object_id in enumerate(ids)}
    ends = np.array([(index[a], index[b]) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
    graph = coo_matrix((np.ones(len(ends)), (ends[:, 0], ends[:, 1])), shape=(len(ids),) * 2)
    _, label = connected_components(graph, directed=False)
    components: dict[int, list] = {}
    for pair, (a, _) in zip(pairs, ends, strict=True):
        components.setdefault(int(label[a]), []).append(pair)
    batches: list[list] = [[] for _ in range(count)]
    for component in sorted(components.values(), key=lambda c: (-len(c), c[0])):
        min(batches, key=len).extend(component)
    return [sorted(b) for b in batches if b]


@dataclass(frozen=True)
class PairJob:
    """One batch of pairs to measure (whole components of the pair graph: no object of it is
    in another job), with the records of its objects."""

    records: list
    pairs: list[tuple[str, str]]
    common: frozenset
    overridden: frozenset


def measure_job(job: PairJob) -> list[PairEvidence]:
    """The evidence on a job's pairs, each object read at most once."""
    return _measure_batch(job.records, job.pairs, job.common, job.overridden)


def measured_jobs(jobs: list[PairJob]) -> Iterator[list[PairEvidence]]:
    """`measure_job` of each job in turn (for worker processes that run generators)."""
    for job in jobs:
        yield measure_job(job)


class JobRunner(Protocol):
    """Runs pair jobs somewhere (worker processes, Prefect tasks, Dask workers): `workers` of
    them at once; `run(jobs)` returns each job's evidence, in order."""

    workers: int

    def run(self, jobs: list[PairJob]) -> list[list[PairEvidence]]: ...


@dataclass
class InProcesses:
    """The default JobRunner: a pool of `workers` spawned processes for the stage."""

    workers: int = PROCESSES

    def run(self, jobs: list[PairJob]) -> list[list[PairEvidence]]:
        context = multiprocessing.get_context("spawn")  # the build's threads make fork unsafe
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            return list(pool.map(measure_job, jobs))


def _measure_all(
    by_id, pairs, common, overridden, runner: JobRunner | None
) -> dict[tuple[str, str], PairEvidence]:
    """pair -> evidence: in this process below PROCESS_PAIRS pairs, else as jobs of whole
    pair-graph components (each object still read once) on `runner` (default: InProcesses;
    the evidence is Python-heavy, so threads would wait on each other)."""
    if len(pairs) < PROCESS_PAIRS:
        measured = _measure_batch(list(by_id.values()), pairs, common, overridden)
        return dict(zip(pairs, measured, strict=True))
    runner = runner or InProcesses()
    jobs = []
    for batch in _batches(pairs, runner.workers * BATCHES_PER_PROCESS):
        records = [by_id[i] for i in sorted({i for pair in batch for i in pair})]
        held = frozenset(overridden & {frozenset(p) for p in batch})
        jobs.append(PairJob(records, batch, common, held))
    found: dict[tuple[str, str], PairEvidence] = {}
    for job, evidence in zip(jobs, runner.run(jobs), strict=True):
        found.update(zip(job.pairs, evidence, strict=True))
    return {pair: found[pair] for pair in pairs}


# --------------------------------------------------------------------------- cache
EVIDENCE_FORMAT = 1  # bump when the evidence of a pair changes meaning


class EvidenceCache(Protocol):
    """Where pair evidence is kept between builds, by content key (`pipeline.cache.ResultStore`)."""

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict) -> None: ...


def _digest(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=np.ndarray.tolist)
    return hashlib.sha256(text.encode()).hexdigest()


def record_key(r: keys.ObjectRecord) -> str:
    """The content of everything `measure` reads of one object: its record (without the
    folder it is in now) and the bytes of its URDF (the meshes are in the record's digests)."""
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name != "urdf"}
    try:
        urdf = hashlib.sha256(r.urdf.read_bytes()).hexdigest()
    except OSError:
        urdf = None
    return _digest({**fields, "urdf": urdf})


def pair_key(ka: str, kb: str, common: frozenset, full: bool) -> str:
    """The cache key of a pair's evidence: both objects' record keys, the common digests
    (stock parts held by many objects, no evidence) among theirs, and whether E_tree is
    measured at every turn (`full`)."""
    return _digest(
        {"format": EVIDENCE_FORMAT, "a": ka, "b": kb, "common": sorted(common), "full": full}
    )


def evidence_to_json(e: PairEvidence) -> dict:
    return dataclasses.asdict(e)


def evidence_from_json(data: dict) -> PairEvidence:
    kin = data["motion"]
    return PairEvidence(
        **{k: v for k, v in data.items() if k not in ("keys", "motion")},
        keys=tuple(data["keys"]),
        motion=None if kin is None else motion.MotionEvidence(**kin),
    )


def _evidence(by_id, pairs, common, overridden, cache: EvidenceCache | None, runner):
    """(pair -> evidence, pairs measured): from the cache where a pair's content is unchanged
    (`pair_key`), else measured (`_measure_all`) and stored."""
    if cache is None:
        return _measure_all(by_id, pairs, common, overridden, runner), len(pairs)
    ids = {i for pair in pairs for i in pair}
    content = {i: record_key(by_id[i]) for i in sorted(ids)}
    pair_keys = {}
    for a, b in pairs:
        held = common & (by_id[a].mesh_digests | by_id[b].mesh_digests)
        full = frozenset((a, b)) in overridden
        pair_keys[(a, b)] = pair_key(content[a], content[b], held, full)
    found = {}
    for pair, key in pair_keys.items():
        stored = cache.get(key)
        if stored is not None:
            found[pair] = evidence_from_json(stored)
    todo = [pair for pair in pairs if pair not in found]
    measured = _measure_all(by_id, todo, common, overridden, runner) if todo else {}
    for pair, e in measured.items():
        cache.put(pair_keys[pair], evidence_to_json(e))
    found.update(measured)
    return {pair: found[pair] for pair in pairs}, len(todo)


# --------------------------------------------------------------------------- clusters
class _UnionFind:
    def __init__(self, ids):
        self.parent = {i: i for i in ids}
        self.members = {i: {i} for i in ids}

    def find(self, x: str) -> str:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str, distinct: set[frozenset]) -> bool:
        """Join the clusters of a and b unless that puts two objects declared distinct together."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if any(frozenset((x, y)) in distinct for x in self.members[ra] for y in self.members[rb]):
            return False
        if ra > rb:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.members[ra] |= self.members.pop(rb)
        return True


def canonical_rank(record: keys.ObjectRecord, priority: tuple[str, ...]) -> tuple:
    """Sort key of the canonical policy: source priority, more moving joints, pass over warn,
    object_id."""
    rank = priority.index(record.source) if record.source in priority else len(priority)
    return (rank, -record.n_moving, record.status != "pass", record.object_id)


def find_duplicates(
    records: list[keys.ObjectRecord],
    settings: DuplicateSettings,
    cache: EvidenceCache | None = None,
    runner: JobRunner | None = None,
):
    """Clusters, canonical members, table rows and moved-out objects (see the module).
    `cache`: pair evidence kept by content between builds (a pair whose objects did not change
    is not measured again); `runner`: where many pairs are measured (default: InProcesses)."""
    records = sorted(records, key=lambda r: r.object_id)
    by_id = {r.object_id: r for r in records}
    pairs = keys.candidate_pairs(records)
    overridden = {frozenset(p) for p in (*settings.same, *settings.distinct)}
    todo = {tuple(sorted((records[i].object_id, records[j].object_id))) for i, j in pairs}
    todo |= {tuple(sorted(p)) for p in overridden if len(p) == 2 and p <= by_id.keys()}
    held = Counter(d for r in records for d in r.mesh_digests)
    common = frozenset(d for d, n in held.items() if n > keys.COMMON_DIGEST)
    ordered = sorted(todo)
    evidence, measured = _evidence(by_id, ordered, common, overridden, cache, runner)

    same = {frozenset(p) for p in settings.same}
    distinct = {frozenset(p) for p in settings.distinct}
    for p, e in evidence.items():
        key = frozenset(p)
        if key in same:
            evidence[p] = replace(e, duplicate=True, decision="override.same")
        elif key in distinct:
            evidence[p] = replace(e, duplicate=False, decision="override.distinct")

    joined = sorted(
        (e for e in evidence.values() if e.duplicate),
        key=lambda e: (e.decision != "override.same", e.shape_distance or 0.0, e.a, e.b),
    )
    uf = _UnionFind(by_id)
    linked: dict[str, PairEvidence] = {}
    for e in joined:
        if uf.union(e.a, e.b, distinct):
            linked.setdefault(e.a, e)
            linked.setdefault(e.b, e)

    cluster_of: dict[str, str] = {}
    clusters: list[list[str]] = []
    for root in sorted(uf.members):
        members = sorted(uf.members[root])
        best = min(members, key=lambda i: canonical_rank(by_id[i], settings.priority))
        for m in members:
            cluster_of[m] = best
        if len(members) > 1:
            clusters.append(members)

    moved_out = {}
    rows = []
    for members in clusters:
        canonical = cluster_of[members[0]]
        for m in members:
            e = linked[m]
            handling = "canonical" if m == canonical else settings.handling
            if handling == "move_out":
                moved_out[m] = canonical
            rows.append(
                _row(
                    by_id[m], canonical, e, "canonical" if m == canonical else e.decision, handling
                )
            )
    for e in evidence.values():
        if e.decision == "override.distinct":
            for m, other in ((e.a, e.b), (e.b, e.a)):
                rows.append(_row(by_id[m], cluster_of[m], e, e.decision, "distinct", other))
    rows.sort(key=lambda r: (r["cluster_id"], r["object_id"], r["matched_to"] or ""))
    return DuplicateResult(cluster_of, rows, moved_out, list(evidence.values()), measured)


def _yaw_of(e: PairEvidence, object_id: str) -> float | None:
    """The yaw that turns `object_id` onto the other object of the pair (degrees)."""
    if e.yaw is None:
        return None
    return float(e.yaw if e.a == object_id else (360 - e.yaw) % 360)


def _row(record, canonical, e: PairEvidence, decision, handling, matched_to=None) -> dict:
    kin = e.motion
    return {
        "cluster_id": canonical,
        "object_id": record.object_id,
        "source": record.source,
        "canonical_id": canonical,
        "is_canonical": record.object_id == canonical,
        "matched_to": matched_to or (e.b if e.a == record.object_id else e.a),
        "decision": decision,
        "handling": handling,
        "shape_distance": e.shape_distance,
        "yaw_degrees": _yaw_of(e, record.object_id),
        "scale_ratio": (e.scale_ratio if e.a == record.object_id else 1 / e.scale_ratio)
        if e.scale_ratio
        else None,
        "e_tree": kin.e_tree if kin else None,
        "e_tree_unmatched": kin.unmatched_a + kin.unmatched_b if kin else None,
        "welded_motion": kin.welded_motion if kin else None,
        "kinematics": kin.relation if kin else None,
        "same_meshes": e.same_meshes,
        "keys": sorted(e.keys),
    }
