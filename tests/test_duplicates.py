"""The duplicate stage: planted twins found, the canonical policy, keep-and-flag versus
move-out, curator overrides, determinism, and splits that cannot leak (a property test)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import schemas
from duplicates import DuplicateSettings, ObjectRecord, find_duplicates, record_from_rows, stage
from duplicates.keys import candidate_pairs, cheap_match, unit_factor
from duplicates.motion import could_agree, in_lengths, joint_tree, motion_evidence
from duplicates.stage import canonical_rank
from export.selection import EVAL_SIZE, assign_splits
from pipeline.build import PairJobsInWorkers, WorkerPool
from pipeline.cache import ResultStore
from samples.generate import generate_library
from samples.twins import DUPLICATE_VARIANTS, NEAR_MISS_VARIANTS


# --------------------------------------------------------------------------- splits
@st.composite
def clusterings(draw):
    """Objects with random duplicate clusters (canonical member: a random member)."""
    n = draw(st.integers(1, 500))
    labels = draw(st.lists(st.integers(0, draw(st.integers(0, n))), min_size=n, max_size=n))
    members = defaultdict(list)
    for i, label in enumerate(labels):
        members[label].append(f"src{i % 3}__obj{i:04d}")
    rows = []
    for group in members.values():
        canonical = group[draw(st.integers(0, len(group) - 1))]
        for object_id in group:
            i = int(object_id[-4:])
            rows.append(
                {
                    "object_id": object_id,
                    "category": f"c{i % 7}",
                    "supercategory": f"s{i % 4}",
                    "status": "pass" if i % 5 else "warn",
                    "n_joints": i % 3,
                    "cluster_id": canonical,
                    "is_canonical": object_id == canonical,
                }
            )
    return rows


@settings(max_examples=60, deadline=None)
@given(clusterings())
def test_no_cluster_crosses_splits_and_eval200_holds_one_member_per_cluster(rows):
    out = assign_splits(rows)
    splits, in_eval = defaultdict(set), defaultdict(int)
    for r in out:
        splits[r["cluster_id"]].add(r["split"])
        in_eval[r["cluster_id"]] += r["eval200"]
        assert not r["eval200"] or r["is_canonical"]
    assert all(len(s) == 1 for s in splits.values()), "a cluster is split across splits"
    assert all(n <= 1 for n in in_eval.values()), "eval200 holds two members of a cluster"
    assert sum(in_eval.values()) == min(EVAL_SIZE, len(splits))


# --------------------------------------------------------------------------- pieces
def _record(object_id, source, n_moving=1, status="pass") -> ObjectRecord:
    return ObjectRecord(
        object_id=object_id,
        source=source,
        category="cabinet",
        status=status,
        n_moving=n_moving,
        type_counts=(2, n_moving, 0, 0, 0),
        bbox_min=(-0.5, -0.5, 0.0),
        bbox_max=(0.5, 0.5, 1.0),
        mesh_files=(),
        joints=(),
        urdf=Path("unused.urdf"),
    )


def test_canonical_policy_order():
    priority = ("partnet", "gensim2", "bestman")
    members = [
        _record("bestman__a", "bestman", n_moving=9),
        _record("gensim2__z", "gensim2", n_moving=1),
        _record("gensim2__y", "gensim2", n_moving=3, status="warn"),
        _record("gensim2__x", "gensim2", n_moving=3, status="warn"),
        _record("gensim2__w", "gensim2", n_moving=3),
        _record("other__a", "other", n_moving=20),
    ]
    ranked = [r.object_id for r in sorted(members, key=lambda r: canonical_rank(r, priority))]
    # source priority, then more moving joints, then pass over warn, then object_id; a source
    # missing from the priority comes last
    assert ranked == [
        "gensim2__w",
        "gensim2__x",
        "gensim2__y",
        "gensim2__z",
        "bestman__a",
        "other__a",
    ]


def test_unit_factors_and_blocking_are_scale_free():
    assert unit_factor(1.0) == 1.0 and unit_factor(0.1) == pytest.approx(0.1)
    assert unit_factor(1000.4) == 1000.0 and unit_factor(1 / 25.4) == pytest.approx(1 / 25.4)
    assert unit_factor(1.2) is None and unit_factor(0.0) is None
    big = _record("b__big", "b")
    big = ObjectRecord(**{**big.__dict__, "bbox_min": (-5, -5, 0), "bbox_max": (5, 5, 10)})
    turned = ObjectRecord(
        **{**_record("c__t", "c").__dict__, "bbox_min": (-1, -0.5, 0), "bbox_max": (1, 0.5, 2)}
    )
    flat = ObjectRecord(
        **{**_record("d__f", "d").__dict__, "bbox_min": (-1, -1, 0), "bbox_max": (1, 1, 0.1)}
    )
    records = [_record("a__a", "a"), big, flat, turned]
    pairs = candidate_pairs(records)
    assert (0, 1) in pairs and "extents" in pairs[(0, 1)], "ten times the size, same box shape"
    assert (0, 2) not in pairs and (1, 2) not in pairs


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.5, 0.5004, 0.51, 0.7]),
            st.sampled_from([1.0, 1.003, 1.2]),
            st.sampled_from([0.001, 0.0254, 0.1, 1.0, 1.0015, 1.2, 10.0, 25.4, 1000.0]),
        ),
        min_size=2,
        max_size=14,
    )
)
def test_blocking_proposes_every_pair_whose_boxes_agree(boxes):
    """The k-d tree blocking lists exactly the pairs a comparison of all pairs would keep."""
    records = [
        ObjectRecord(
            **{
                **_record(f"s__{k}", "s").__dict__,
                "bbox_min": (-w * size / 2, -size / 2, 0.0),
                "bbox_max": (w * size / 2, size / 2, h * size),
            }
        )
        for k, (w, h, size) in enumerate(boxes)
    ]
    proposed = {p for p, why in candidate_pairs(records).items() if "extents" in why}
    for i, j in itertools.combinations(range(len(records)), 2):
        if "extents" in cheap_match(records[i], records[j])[1]:
            assert (i, j) in proposed


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.3, 0.5, 1.0]),  # footprint rectangle's short side (long: 1)
            st.floats(0.0, 90.0),  # yaw, degrees
            st.sampled_from([0.5, 0.5004, 0.6]),  # height
            st.sampled_from([0.001, 0.1, 1.0, 1.0015, 1.2, 1000.0]),  # size
        ),
        min_size=2,
        max_size=14,
    )
)
def test_the_height_block_proposes_every_turned_box(boxes):
    """Rest boxes of rectangles turned by any yaw: the k-d tree lists every pair the height
    test keeps, and that test keeps every pair of one rectangle at a unit factor."""
    records = []
    for k, (w, yaw, h, size) in enumerate(boxes):
        t = np.radians(yaw)
        ex, ey = abs(np.cos(t)) + w * abs(np.sin(t)), abs(np.sin(t)) + w * abs(np.cos(t))
        records.append(
            ObjectRecord(
                **{
                    **_record(f"s__{k}", "s").__dict__,
                    "bbox_min": (-ex * size / 2, -ey * size / 2, 0.0),
                    "bbox_max": (ex * size / 2, ey * size / 2, h * size),
                }
            )
        )
    proposed = {p for p, why in candidate_pairs(records).items() if "height" in why}
    for i, j in itertools.combinations(range(len(records)), 2):
        kept = "height" in cheap_match(records[i], records[j])[1]
        assert not kept or (i, j) in proposed
        (wi, _, hi, si), (wj, _, hj, sj) = boxes[i], boxes[j]
        if (wi, hi) == (wj, hj) and unit_factor(sj / si) is not None:
            assert kept, "one rectangle turned otherwise"


def _joints(twists, limits, names):
    return [
        {"twist": t, "lower": lo, "upper": up, "parent": p, "child": c}
        for t, (lo, up), (p, c) in zip(twists, limits, names, strict=True)
    ]


def test_e_tree_after_yaw_and_scale_and_for_welded_joints():
    door = [0, 0, 1, 0.5, 0, 0]  # revolute about z through (0, 0.5, 0)... v = -w x p
    drawer = [0, 0, 0, 0, -1, 0]
    b = _joints([door, drawer], [(0, 1.5), (0, 0.4)], [("base", "l0"), ("base", "l1")])
    # A is B turned by -90 degrees about z and ten times smaller
    turn = np.array([[0, 1, 0], [-1, 0, 0], [0, 0, 1]], dtype=float)
    a = [
        {
            **j,
            "twist": list(turn @ np.array(j["twist"][:3])) + list(turn @ np.array(j["twist"][3:])),
        }
        for j in b
    ]
    a[0]["twist"][3:] = [v / 10 for v in a[0]["twist"][3:]]
    a[1]["lower"], a[1]["upper"] = 0.0, 0.04
    yaw90 = turn.T
    same = motion_evidence(in_lengths(joint_tree(a), 1.0, yaw90, 10.0), joint_tree(b))
    assert same.relation == "same" and same.e_tree < 1e-12
    welded = motion_evidence(joint_tree(b[:1]), joint_tree(b))
    assert welded.relation == "welded" and welded.e_tree == pytest.approx(0.4)
    assert welded.welded_motion == pytest.approx(0.4), "the welded drawer's own motion"
    # two doors on one hinge line, the copy keeps the smaller one: pairing it with the larger
    # door costs E_tree just as much, yet every joint of the copy is a joint of the original
    hinge = _joints([door, door], [(0, 1.7), (0, 2.0)], [("base", "l0"), ("base", "l1")])
    kept = motion_evidence(joint_tree(hinge[:1]), joint_tree(hinge))
    assert kept.relation == "welded" and kept.welded_motion == pytest.approx(2.0 * np.sqrt(1.25))
    assert kept.e_tree == pytest.approx(kept.welded_motion)
    other = _joints([door], [(0, 0.7)], [("base", "l0")])
    assert motion_evidence(joint_tree(other), joint_tree(b)).relation == "changed"
    # the cheap test before E_tree: never false where E_tree says same or welded
    for x, y in (
        (in_lengths(joint_tree(a), 1.0, yaw90, 10.0), joint_tree(b)),
        (joint_tree(b[:1]), joint_tree(b)),
    ):
        assert could_agree(x, y) and could_agree(y, x)
    assert could_agree(joint_tree(hinge[:1]), joint_tree(hinge))
    assert not could_agree(joint_tree(other), joint_tree(b))
    assert not could_agree(joint_tree(a), joint_tree(b)), "A not turned back: other axes"


# --------------------------------------------------------------------------- builds
def _build(builds, sources: Path, out: Path, cache: Path) -> Path:
    """`arena build` of `sources` (a library folder or a sources file) into `out`, in batches
    of 16 objects on 2 worker processes."""
    assert builds.command(sources, out, cache, batch_size=16, workers=2) == 0
    return out


def _table(release: Path, name: str) -> list[dict]:
    return pq.read_table(release / "manifest" / f"{name}.parquet").to_pylist()


def _clusters(release: Path) -> dict[str, set]:
    clusters = defaultdict(set)
    for r in _table(release, "duplicates"):
        if r["decision"] != "override.distinct":
            clusters[r["cluster_id"]].add(r["object_id"])
    return clusters


@pytest.fixture(scope="module")
def twin_library(builds, tmp_path_factory):
    """A generated library with planted twins, built once (keep-and-flag)."""
    root = tmp_path_factory.mktemp("twins")
    generate_library(root / "library", n=60, seed=9, twins=0.35)
    _build(builds, root / "library", root / "keep", root / "cache")
    return root


def _truth(root: Path) -> tuple[set, set]:
    """(pairs of the same object, planted near-miss pairs) as object_id pairs: objects of equal
    design in twins.json are the same object."""
    objects = _table(root / "keep", "objects")
    ids = {(o["source"], o["source_id"].split("/")[0]): o["object_id"] for o in objects}
    data = json.loads((root / "library" / "twins.json").read_text())
    groups, near = defaultdict(set), set()
    for o in data["objects"]:  # equal designs: the same object
        groups[o["design"]].add(ids[(o["source"], o["folder"])])
    for t in data["twins"]:
        if not t["duplicate"]:
            near.add(
                frozenset(
                    (
                        ids[(t["source"], t["folder"])],
                        ids[t["original_source"], t["original_folder"]],
                    )
                )
            )
    pairs = {frozenset(p) for g in groups.values() for p in itertools.combinations(g, 2)}
    return pairs, near


def _found_pairs(release) -> set[frozenset]:
    """Every pair of members of one cluster of `release`."""
    return {
        frozenset(p)
        for members in _clusters(release).values()
        for p in itertools.combinations(sorted(members), 2)
    }


def test_planted_duplicates_are_found_and_near_misses_are_not(twin_library):
    truth, near = _truth(twin_library)
    variants = {
        t["variant"]
        for t in json.loads((twin_library / "library" / "twins.json").read_text())["twins"]
    }
    assert variants == {*DUPLICATE_VARIANTS, *NEAR_MISS_VARIANTS}, "every variant is planted"
    found = _found_pairs(twin_library / "keep")
    assert found == truth
    assert not found & near


def test_meshes_split_or_merged_otherwise_are_found(twin_library):
    """A twin whose link meshes are one file per link, or every part in two files, is found."""
    objects = _table(twin_library / "keep", "objects")
    ids = {(o["source"], o["source_id"].split("/")[0]): o["object_id"] for o in objects}
    files = {o["object_id"]: o for o in objects}
    cluster_of = {m: c for c, members in _clusters(twin_library / "keep").items() for m in members}
    twins = json.loads((twin_library / "library" / "twins.json").read_text())["twins"]
    checked = 0
    for t in twins:
        if t["variant"] not in ("merged_meshes", "split_meshes"):
            continue
        twin = ids[(t["source"], t["folder"])]
        original = ids[(t["original_source"], t["original_folder"])]
        assert cluster_of.get(twin) is not None and cluster_of.get(twin) == cluster_of.get(original)
        folder = twin_library / "keep" / "objects" / twin
        urdf = (folder / Path(files[twin]["urdf_path"]).name).read_text()
        meshes = len(list((folder / "meshes").glob("*.obj")))
        visuals = urdf.count("<visual")
        assert visuals == meshes, "one mesh file per visual"
        checked += 1
    assert checked >= 2


def test_clusters_do_not_depend_on_the_order_of_the_objects(twin_library, monkeypatch):
    """The same records in another order, measured in worker processes (the stage's own or
    the build's), give the same clusters, rows and evidence."""
    objects = _table(twin_library / "keep", "objects")
    joints = defaultdict(list)
    for j in _table(twin_library / "keep", "joints"):
        joints[j["object_id"]].append(j)
    records = [_record_of(twin_library / "keep", o, joints[o["object_id"]]) for o in objects]
    priority = tuple(sorted({o["source"] for o in objects}))
    first = find_duplicates(records, DuplicateSettings(priority=priority))
    monkeypatch.setattr(stage, "PROCESS_PAIRS", 1)
    batches = stage._batches(sorted((e.a, e.b) for e in first.evidence), 8)
    assert len(batches) > 1, "the pairs split into batches that share no object"
    for x, y in itertools.combinations(batches, 2):
        assert not {i for p in x for i in p} & {i for p in y for i in p}
    again = find_duplicates(records[::-1], DuplicateSettings(priority=priority))
    assert first.rows == again.rows and first.cluster_of == again.cluster_of
    assert first.evidence == again.evidence
    in_workers = PairJobsInWorkers(WorkerPool(2))  # the build's worker processes, as jobs
    on_the_build = find_duplicates(records, DuplicateSettings(priority=priority), None, in_workers)
    assert on_the_build.evidence == first.evidence and on_the_build.rows == first.rows
    members = defaultdict(set)
    for r in first.rows:
        members[r["cluster_id"]].add(r["object_id"])
    assert sorted(map(sorted, members.values())) == sorted(
        map(sorted, _clusters(twin_library / "keep").values())
    )


def _record_of(release: Path, o: dict, joint_rows: list[dict]) -> ObjectRecord:
    folder = release / "objects" / o["object_id"]
    files = {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }
    return record_from_rows(o, joint_rows, files, folder)


def _records(tables: Path, release: Path) -> list[ObjectRecord]:
    """The records of the objects in `tables`' manifests, read from their folders in `release`."""
    joints = defaultdict(list)
    for j in _table(tables, "joints"):
        joints[j["object_id"]].append(j)
    return [_record_of(release, o, joints[o["object_id"]]) for o in _table(tables, "objects")]


def test_keep_and_flag(twin_library):
    release = twin_library / "keep"
    objects = {o["object_id"]: o for o in _table(release, "objects")}
    rows = _table(release, "duplicates")
    for row in rows:
        schemas.validate(row, "duplicates")
    clusters = _clusters(release)
    assert clusters
    priority = [
        s["name"]
        for s in yaml.safe_load((twin_library / "library" / "sources.yaml").read_text())["sources"]
    ]
    for cluster_id, members in clusters.items():
        assert cluster_id in members
        assert {objects[m]["cluster_id"] for m in members} == {cluster_id}
        assert [m for m in members if objects[m]["is_canonical"]] == [cluster_id]
        assert len({objects[m]["split"] for m in members}) == 1
        assert sum(objects[m]["eval200"] for m in members) <= 1
        best = min(
            members,
            key=lambda m: (
                priority.index(objects[m]["source"]),
                -objects[m]["n_joints"],
                objects[m]["status"] != "pass",
                m,
            ),
        )
        assert best == cluster_id, "the documented canonical policy"
    for o in objects.values():
        if not any(o["object_id"] in m for m in clusters.values()):
            assert o["cluster_id"] == o["object_id"] and o["is_canonical"]
    info = json.loads((release / "release.json").read_text())
    assert info["counts"]["duplicates"]["clusters"] == len(clusters)
    assert sum(info["counts"]["duplicates"]["by_library_pair"].values()) == sum(
        map(len, clusters.values())
    ) - len(clusters)
    assert "## Duplicates" in (release / "README.md").read_text()


def _sources_with(root: Path, name: str, **extra) -> Path:
    data = yaml.safe_load((root / "library" / "sources.yaml").read_text())
    for entry in data["sources"]:
        entry["path"] = str(root / "library" / entry["path"])
    data.update(extra)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_move_out_lists_every_duplicate_with_its_canonical_id(builds, twin_library):
    root = twin_library
    sources = _sources_with(root, "moved", duplicates="move_out")
    release = _build(builds, sources, root / "moved", root / "cache")
    clusters = _clusters(root / "keep")
    objects = {o["object_id"] for o in _table(release, "objects")}
    rejects = {r["object_id"]: r for r in _table(release, "rejects")}
    for cluster_id, members in clusters.items():
        assert cluster_id in objects
        for m in members - {cluster_id}:
            assert m not in objects and not (release / "objects" / m).exists()
            assert rejects[m]["code"] == "duplicate.of" and rejects[m]["element"] == cluster_id
    assert _clusters(release) == clusters
    assert {r["handling"] for r in _table(release, "duplicates")} == {"canonical", "move_out"}
    info = json.loads((release / "release.json").read_text())
    for s in info["sources"]:
        assert s["discovered"] == s["accepted"] + s["rejected"]
    assert info["counts"]["accepted"] == len(objects)


def test_curator_overrides_are_decisions(builds, twin_library):
    root = twin_library
    clusters = _clusters(root / "keep")
    a, b = sorted(next(m for m in clusters.values() if len(m) == 2))
    lonely = sorted(
        o["object_id"]
        for o in _table(root / "keep", "objects")
        if not any(o["object_id"] in m for m in clusters.values())
    )
    x, y = lonely[0], lonely[-1]
    overrides = root / "overrides.yaml"
    overrides.write_text(
        yaml.safe_dump(
            {"version": 1, "overrides": {}, "duplicates": {"same": [[x, y]], "distinct": [[a, b]]}}
        )
    )
    sources = _sources_with(root, "overridden", overrides=str(overrides))
    release = _build(builds, sources, root / "overrides", root / "cache")
    after = _clusters(release)
    assert not any({a, b} <= m for m in after.values())
    rows = _table(release, "duplicates")
    assert {
        (r["object_id"], r["matched_to"]) for r in rows if r["decision"] == "override.distinct"
    } == {(a, b), (b, a)}
    together = next(m for m in after.values() if x in m)
    assert together == {x, y}
    assert {r["decision"] for r in rows if r["object_id"] in (x, y)} <= {
        "override.same",
        "canonical",
    }


@pytest.mark.slow
def test_same_input_gives_byte_identical_duplicates_manifest(builds, twin_library):
    root = twin_library
    again = _build(builds, root / "library", root / "again", root / "cache")
    cold = _build(builds, root / "library", root / "cold", root / "cold-cache")
    first = (root / "keep" / "manifest" / "duplicates.parquet").read_bytes()
    assert (again / "manifest" / "duplicates.parquet").read_bytes() == first
    assert (cold / "manifest" / "duplicates.parquet").read_bytes() == first
    assert (cold / "manifest" / "objects.parquet").read_bytes() == (
        root / "keep" / "manifest" / "objects.parquet"
    ).read_bytes()


@pytest.mark.slow
def test_twins_turned_by_any_yaw_are_found_and_near_misses_are_not(builds, tmp_path, monkeypatch):
    """Twins turned about z by angles that are no quarter turns (their boxes, and so their
    placements, differ from the original's) join their originals; the near-misses, turned or
    not, do not."""
    import samples.twins

    monkeypatch.setattr(samples.twins, "DUPLICATE_VARIANTS", ("any_yaw",))
    monkeypatch.setattr(samples.twins, "NEAR_MISS_VARIANTS", NEAR_MISS_VARIANTS)
    generate_library(tmp_path / "library", n=44, seed=3, twins=0.45)
    _build(builds, tmp_path / "library", tmp_path / "keep", tmp_path / "cache")
    truth, near = _truth(tmp_path)
    twins = json.loads((tmp_path / "library" / "twins.json").read_text())["twins"]
    turned = [t for t in twins if t["variant"] == "any_yaw"]
    assert len(turned) >= 5 and near
    found = _found_pairs(tmp_path / "keep")
    assert found == truth
    assert not found & near
    yaws = {
        r["yaw_degrees"]
        for r in _table(tmp_path / "keep", "duplicates")
        if r["decision"] == "duplicate"
    }
    assert any(y % 90 for y in yaws), "found at a yaw that is no quarter turn"


def _sample_of(points: np.ndarray):
    from duplicates.shape import Sample, outline

    centroid = points.mean(axis=0)
    covariance = np.cov((points - centroid).T, bias=True)
    return Sample(1.0, centroid, covariance, *outline(points), draw=lambda: points)


@pytest.mark.parametrize("footprint", [(1.0, 0.5), (1.0, 1.0)])  # principal axes, else the grid
@pytest.mark.parametrize("degrees", [17.0, 123.4, 301.25])
def test_any_yaw_alignment_finds_the_turn_and_the_shift(footprint, degrees):
    """A surface turned by any yaw and moved: the search finds the yaw (to its precision) and
    puts the two on each other; a stretched copy does not spread alike."""
    import trimesh

    from duplicates.shape import any_yaw_alignment, spreads_agree, yaw_matrix

    body = trimesh.creation.box(extents=(*footprint, 0.4))
    knob = trimesh.creation.box(extents=(0.2, 0.1, 0.1))
    knob.apply_translation((0.3 * footprint[0], 0.2 * footprint[1], 0.25))
    mesh = trimesh.util.concatenate([body, knob])
    rng = np.random.default_rng(5)
    points = trimesh.sample.sample_surface(mesh, 8192, seed=rng)[0]
    turned = points @ yaw_matrix(degrees).T + np.array([0.07, -0.03, 0.0])
    a, b = _sample_of(points), _sample_of(turned)
    assert spreads_agree(a, b)
    assert not spreads_agree(a, _sample_of(points * np.array([1.05, 1.0, 1.0])))
    found = any_yaw_alignment(a, b)
    assert abs((found.yaw - degrees + 180) % 360 - 180) < 0.05
    assert found.distance < 1e-3
    assert np.allclose(found.shift[:2], [0.07, -0.03], atol=1e-3)


def test_the_stage_keeps_few_parsed_meshes_in_the_process(twin_library, monkeypatch):
    """Each signature taken cuts the process's parsed meshes down to KEPT_BYTES (here 1 byte:
    the most recent mesh), as after an object of a build: a pair job in a build's worker
    otherwise kept up to 256 MB of them."""
    from normalize.meshes import store

    release = twin_library / "keep"
    records = _records(release, release)
    monkeypatch.setattr(store, "KEPT_BYTES", 1)
    store.clear_cache()
    run = find_duplicates(records, DuplicateSettings())
    assert run.measured > 0 and len(store._cache) == 1


def test_pair_evidence_is_cached_by_content(twin_library, tmp_path):
    """A warm run measures no pair and gives the cold run's clusters; editing one object's mesh
    re-measures exactly the pairs of that object."""
    release = tmp_path / "release"
    shutil.copytree(twin_library / "keep" / "objects", release / "objects")
    objects = _table(twin_library / "keep", "objects")
    priority = tuple(sorted({o["source"] for o in objects}))
    chosen = DuplicateSettings(priority=priority)

    def records():
        return _records(twin_library / "keep", release)

    store = ResultStore(tmp_path / "cache", "code")
    uncached = find_duplicates(records(), chosen)
    cold = find_duplicates(records(), chosen, store)
    assert cold.measured == len(cold.evidence) == uncached.measured > 0
    warm = find_duplicates(records(), chosen, store)
    assert warm.measured == 0
    for run in (cold, warm):
        assert run.rows == uncached.rows and run.cluster_of == uncached.cluster_of
        assert run.evidence == uncached.evidence

    edited = min(p for e in cold.evidence for p in (e.a, e.b))
    name = next(n for r in records() if r.object_id == edited for n, _ in r.mesh_files)
    mesh = release / "objects" / edited / name
    os.chmod(mesh, 0o644)
    mesh.write_text(mesh.read_text() + "# edited\n")
    after = find_duplicates(records(), chosen, store)
    own = [e for e in after.evidence if edited in (e.a, e.b)]
    assert own and after.measured == len(own)
    assert find_duplicates(records(), chosen, store).measured == 0


def test_a_record_keeps_only_the_joint_fields_the_stage_reads(twin_library):
    """The stage's record of an object keeps of each joints row what `measure` reads, so pair
    evidence stays cached when another column changes (a link's inertia, a joint's name) and
    is measured again when the motion does."""
    release = twin_library / "keep"
    row = _table(release, "objects")[0]
    joints = [j for j in _table(release, "joints") if j["object_id"] == row["object_id"]]
    files = {"object.urdf": "0" * 64}
    folder = release / "objects" / row["object_id"]
    key = stage.record_key(record_from_rows(row, joints, files, folder))
    renamed = [{**j, "joint_name": "other", "child_inertia": [0.0] * 9} for j in joints]
    assert stage.record_key(record_from_rows(row, renamed, files, folder)) == key
    moved = [{**j, "lower": j["lower"] - 0.1} for j in joints]
    assert stage.record_key(record_from_rows(row, moved, files, folder)) != key
