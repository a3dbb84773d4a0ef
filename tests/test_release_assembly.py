"""Atomic release assembly: lock, staging and publish, checksums, changelog and dataset card."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import yaml

from export import card, release
from export.digests import sha256_file
from export.manifests import TABLES, checksum_lines, digest_listing
from export.release import (
    CHECKSUMS,
    BuildLocked,
    ReleaseError,
    build_lock,
    changelog_markdown,
    check_out,
    checksum_listing,
    compare,
    content_hash,
    publish,
    recover,
    sorted_files,
    verify_checksums,
    write_checksums,
)


def test_second_lock_on_the_same_out_refuses(tmp_path):
    out = tmp_path / "rel"
    with build_lock(out):
        with pytest.raises(BuildLocked, match="already writing") as info, build_lock(out):
            pass
        assert "pid" in str(info.value)
        with build_lock(tmp_path / "other"):  # another output is fine
            pass
    with build_lock(out):  # released after the block
        pass
    assert list(tmp_path.iterdir()) == [], "the lock file is removed with the lock"


def test_lock_held_by_another_process_and_released_when_it_dies(tmp_path):
    out = tmp_path / "rel"
    code = textwrap.dedent(
        f"""
        import sys, time
        from export.release import build_lock
        with build_lock({str(out)!r}):
            print("locked", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(BuildLocked, match=f"pid {proc.pid}"), build_lock(out):
            pass
    finally:
        proc.kill()
        proc.wait()
    with build_lock(out):  # the kernel released the dead process's lock
        pass


def test_publish_replaces_an_earlier_release_and_recover_cleans_up(tmp_path):
    out = tmp_path / "rel"
    first = release.new_staging(out)
    (first / "release.json").write_text("{}")
    (first / "a.txt").write_text("one")
    publish(first, out)
    assert (out / "a.txt").read_text() == "one" and not first.exists()
    second = release.new_staging(out)
    (second / "release.json").write_text("{}")
    (second / "a.txt").write_text("two")
    publish(second, out)
    assert (out / "a.txt").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel"], "no staging or old folder left"
    # a build killed after moving the old release aside but before moving the new one in
    stale = release.new_staging(out)
    (stale / "half").write_text("x")
    out.rename(tmp_path / ".rel.replaced")
    assert not out.exists()
    recover(out)
    assert (out / "a.txt").read_text() == "two", "the earlier release is put back"
    assert not stale.exists(), "staging folders of dead builds are removed"


def test_check_out_refuses_a_folder_that_is_not_a_release(tmp_path):
    check_out(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_out(tmp_path / "empty")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("precious")
    with pytest.raises(ReleaseError, match="not a release"):
        check_out(tmp_path / "home")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReleaseError, match="not a folder"):
        check_out(tmp_path / "file")


def test_checksums_and_content_hash(tmp_path):
    root = tmp_path / "r"
    (root / "manifest").mkdir(parents=True)
    (root / "objects" / "a").mkdir(parents=True)
    (root / "manifest" / "objects.parquet").write_bytes(b"pq")
    (root / "objects" / "a" / "object.urdf").write_text("<robot/>")
    (root / "release.json").write_text('{"created_at": "now"}')
    write_checksums(root)
    digests = checksum_listing(root)
    assert set(digests) == {"manifest/objects.parquet", "objects/a/object.urdf", "release.json"}
    assert verify_checksums(root) == []
    h = content_hash(root)
    (root / "release.json").write_text('{"created_at": "later"}')
    write_checksums(root)
    assert content_hash(root) == h, "release.json is not content"
    (root / "objects" / "a" / "object.urdf").write_text("<robot name='b'/>")
    assert verify_checksums(root) == ["objects/a/object.urdf"]
    assert content_hash(root) != h


def test_checksums_list_files_in_the_order_of_their_whole_paths(tmp_path):
    """The release folder is listed one folder at a time, yet in the order a sort of the whole
    paths gives ("a.txt" and "a-b/..." before "a/...": "." and "-" sort before "/")."""
    names = ["a.txt", "a/b", "a/c/d", "a-b/c", "a b", "ab/x", "objects/a-b/u", "objects/a/u"]
    names += ["objects/a/z/p.png", "objects/a/preview/rest.png", "objects/a.b/u"]
    names += ["manifest/x.parquet", "Z"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    assert list(sorted_files(tmp_path)) == sorted(names)
    assert list(sorted_files(tmp_path, "objects")) == sorted(n for n in names if "objects/" in n)
    wrong = {"objects/a/u": "0" * 64}  # a known digest is taken as it is
    write_checksums(tmp_path, wrong)
    expected = {n: sha256_file(tmp_path / n) for n in names} | wrong
    assert (tmp_path / CHECKSUMS).read_text() == checksum_lines(expected.items())
    content = [(n, d) for n, d in expected.items() if n.startswith(("manifest/", "objects/"))]
    content = [(n, d) for n, d in content if "/preview/" not in n]
    assert content_hash(tmp_path, wrong) == digest_listing(content)


def obj(i, cat="door", sc="Architectural Fixtures", urdf="u", assets="a"):
    return {
        "object_id": i,
        "category": cat,
        "supercategory": sc,
        "urdf_sha256": urdf,
        "assets_sha256": assets,
    }


def test_changelog_groups():
    old = [obj("a"), obj("b"), obj("c"), obj("d")]
    new = [obj("a"), obj("b", assets="a2"), obj("c", cat="window"), obj("e", cat="oven")]
    ch = compare(old, new)
    assert ch.added == ["e"] and ch.removed == ["d"] and ch.modified == ["b"]
    assert ch.recategorized == [
        ("c", "Architectural Fixtures/door", "Architectural Fixtures/window")
    ]
    text = changelog_markdown("2.0", new, old, "1.0")
    assert "## 2.0 (against 1.0)" in text and "- added: 1" in text
    assert "`e` (oven)" in text and "### Re-categorized (1)" in text
    first = changelog_markdown("1.0", old, None, None)
    assert "First release: 4 objects" in first


def test_a_previous_release_is_read_as_the_columns_the_changelog_compares(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "manifest").mkdir()
    rows = [{**obj("a"), "status": "pass"}, {**obj("b", cat="window"), "status": "warn"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "manifest" / "objects.parquet")
    assert release.read_objects(tmp_path) == [obj("a"), obj("b", cat="window")]
    without = [{k: v for k, v in r.items() if k != "supercategory"} for r in rows]
    pq.write_table(pa.Table.from_pylist(without), tmp_path / "manifest" / "objects.parquet")
    with pytest.raises(release.ReleaseError, match="supercategory"):
        release.read_objects(tmp_path)


def test_card_front_matter(tmp_path):
    info = {
        "version": "1.0",
        "convention_version": "1",
        "taxonomy_version": "1",
        "content_hash": "0" * 64,
        "sources": [
            {
                "name": "a",
                "format": "urdf",
                "license": "MIT License",
                "spdx": "MIT",
                "discovered": 2,
                "accepted": 1,
                "rejected": 1,
            },
        ],
        "counts": {
            "accepted": 1,
            "rejected": 1,
            "moving_joints": 2,
            "eval200": 1,
            "by_supercategory": {"Tools": 1},
            "by_joint_type": {"revolute": 2},
            "by_status": {"pass": 1},
            "by_split": {"train": 1},
            "rejects_by_stage": {"parse": 1},
        },
    }
    objects = [{"category": "scissors", "supercategory": "Tools", "warnings": [], "split": "train"}]
    rejects = [{"code": "xml.malformed"}]
    rows = {"objects": 1, "joints": 2, "links": 3, "rejects": 1, "review": 0, "source_files": 2}
    text = card.card_markdown(info, objects, rejects, "![joints](plots/joints.png)", rows)
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["license"] == "mit" and "license_link" not in front
    assert front["task_categories"] == ["robotics"] and front["pretty_name"]
    assert front["size_categories"] == ["n<1K"]
    by_name = {c["config_name"]: c for c in front["configs"]}
    assert list(by_name) == list(TABLES), "every table, review and duplicates without rows too"
    assert by_name["objects"]["default"] is True
    assert by_name["objects"]["data_files"] == [
        {"split": "train", "path": "data/objects/train.parquet"}
    ], "splits without objects are left out"
    assert by_name["joints"]["data_files"] == "manifest/joints.parquet"
    assert "Without rows in this release: `review`, `duplicates`." in text
    assert "left out of the `objects` config: `validation`, `test`." in text
    assert "| a | urdf | not given | 2 | 1 | 1 |" in text and "xml.malformed" in text
    assert "| a | MIT License | MIT | no | 1 |" in text
    assert "plots/joints.png" in text
    assert "## Dataset structure" in text and "| `twist` | `fixed_size_list" in text
    assert "@article{he2026articulatearena" in text
    assert card.size_category(25_000) == "10K<n<100K"


def test_card_license_is_spdx_only_when_every_source_gives_one():
    mit, apache = {"name": "a", "spdx": "MIT"}, {"name": "b", "spdx": "Apache-2.0"}
    stated = {"name": "c", "license": "non-commercial research", "spdx": None}
    assert card.card_license([mit]) == {"license": "mit"}
    assert card.card_license([mit, apache, dict(mit, name="d")]) == {
        "license": ["apache-2.0", "mit"]
    }
    assert card.card_license([mit, stated]) == {
        "license": "other",
        "license_name": "per-source",
        "license_link": "LICENSES.md",
    }
    text = card.licenses_markdown(
        {"version": "1", "sources": [dict(mit, license="MIT", url="https://x/y", revision="abc")]}
    )
    assert "## a" in text and "- SPDX: MIT" in text and "- revision: abc" in text


def test_a_source_snapshot_is_hashed_as_its_outcomes_are_read_back(tmp_path):
    """A source's snapshot digest, hashed one outcome at a time, is the sha256 of the canonical
    JSON of its config and every candidate's files (ids out of order, one not ASCII)."""
    from types import SimpleNamespace

    from export.assemble import _snapshot
    from export.digests import canonical_json, sha256_hex
    from export.outcome import ObjectOutcome, OutcomeFile
    from normalize.sources import SourceConfig

    source = SourceConfig(name="lib", format="urdf", path=tmp_path / "lib", license="MIT")
    outcomes = OutcomeFile(tmp_path / "outcomes.jsonl")
    inputs = {
        "b": {str(tmp_path / "lib" / "b.urdf"): "1" * 64, str(tmp_path / "x.obj"): "missing"},
        "a": {str(tmp_path / "lib" / "a" / "a.urdf"): "2" * 64},
        "é": {},
    }
    for source_id, read in inputs.items():
        outcomes.add(
            [ObjectOutcome(f"lib__{source_id}", "lib", source_id, None, False, inputs=read)]
        )
    where = {o.source_id: position for position, o in outcomes.positions()}
    run = SimpleNamespace(source=source, outcomes=outcomes)
    config = {k: v for k, v in source.as_dict().items() if k not in ("path", "package_roots")}
    listed = {
        "a": [["a/a.urdf", "2" * 64]],
        "b": [["../x.obj", "missing"], ["b.urdf", "1" * 64]],
        "é": [],
    }
    expected = sha256_hex(canonical_json({"config": config, "objects": listed}))
    assert _snapshot(run, where) == expected
