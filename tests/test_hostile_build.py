"""A build over hostile inputs mixed with good objects (tests/hostile_library.py): it completes,
every good object is accepted, every hostile one is rejected with its own code, no file outside
a source root is ever opened (inotify on sentinel files, so opens from C code such as lxml or
MuJoCo count too), and nothing is written outside --out and the cache."""

from __future__ import annotations

import faulthandler
import os
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hostile_library import LARGE_CONTROLS, OpenWatch, build_config, tree, write_hostile_library
from verify_assets import door_urdf, write

from export import release
from normalize import paths
from pipeline.cache import OUTSIDE, hash_inputs

pytestmark = pytest.mark.slow
LIBRARY_SECONDS = 180  # the build of the whole hostile library (about 70 s on 2 busy cores)
BUILD_TIMEOUT = 300  # seconds for both builds: a hang fails the run (each is bounded, 60 s)


@pytest.fixture(scope="module")
def hostile_build(builds, tmp_path_factory):
    """The build over the hostile library, with the sentinels watched and the surrounding
    folders snapshot before and after."""
    root = tmp_path_factory.mktemp("hostile")
    outside = root / "outside"
    outside.mkdir()
    hostile = write_hostile_library(outside)
    build = root / "build"
    build.mkdir()
    # a temporary folder of this build's own (workers inherit TMPDIR): what other test runs
    # on the machine leave in the shared one cannot be mistaken for this build's
    private_tmp = tmp_path_factory.mktemp("tmp")
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = str(private_tmp)
    before = {"root": tree(root), "cwd": sorted(os.listdir()), "tmp": _temp_entries()}
    watch = OpenWatch(hostile.sentinels)

    def run(out: str):
        config = builds.config(hostile.sources_file, build / out, build / "cache", workers=2)
        # every case at once, about 130 objects on 2 shared cores: a bound for all of them
        return build_config(config, LIBRARY_SECONDS, confine=False)  # checked below, and more

    # a hang (a FIFO opened blocking, a sparse file hashed in full) fails the run, with the
    # stacks printed, instead of blocking it for ever
    faulthandler.dump_traceback_later(BUILD_TIMEOUT, exit=True)
    try:
        result = run("release")
        warm = run("warm")  # cache lookups re-hash what every object read: still not outside
        faulthandler.cancel_dump_traceback_later()
        opened = watch.events()
        after = {"root": tree(root), "cwd": sorted(os.listdir()), "tmp": _temp_entries()}
        (hostile.sentinels[0]).read_bytes()  # the control: the watch does see an open
        control = watch.events()
    finally:
        watch.close()
        if saved[0] is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = saved[0]
        tempfile.tempdir = saved[1]
    return {
        "hostile": hostile,
        "result": result,
        "warm": warm,
        "out": build / "release",
        "opened": opened,
        "control": control,
        "before": before,
        "after": after,
    }


def _temp_entries() -> set[str]:
    """Names in the temporary folder that look like this project's (arena-*)."""
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("arena-")}


def test_at_least_twenty_five_kinds_across_the_four_formats(hostile_build):
    expected = hostile_build["hostile"].expected
    assert len(expected) >= 25
    sources = {source for source, _ in expected}
    assert sources == {"sample_urdf", "sample_partnet", "sample_mjcf", "sample_sdf"}


def test_every_good_object_is_accepted_and_every_hostile_one_rejected_with_its_code(
    hostile_build,
):
    result, out = hostile_build["result"], hostile_build["out"]
    expected = hostile_build["hostile"].expected
    assert result.internal_errors == []
    objects = pq.read_table(out / "manifest" / "objects.parquet").to_pylist()
    rejects = pq.read_table(out / "manifest" / "rejects.parquet").to_pylist()
    accepted = {(o["source"], o["source_id"].split("/")[0]) for o in objects}
    assert not any(folder.startswith("hostile_") for _, folder in accepted)
    assert set(LARGE_CONTROLS) <= accepted, "a large but plausible object is accepted"
    assert len(objects) == 40 + len(LARGE_CONTROLS), "the demo library's 40 and the large ones"
    got: dict[tuple[str, str], set[str]] = {}
    for r in rejects:
        key = (r["source"], r["source_id"].split("/")[0])
        got.setdefault(key, set()).add(r["code"])
        assert r["message"], r
    assert got == {key: {code} for key, code in expected.items()}
    info = result.info
    for s in info["sources"]:
        assert s["discovered"] == s["accepted"] + s["rejected"]
    assert release.verify_checksums(out) == []
    warm = hostile_build["warm"]
    # refusals of discovery (the two colliding ids, the three folder links leading out)
    # cost nothing and depend on the listing, not on files read: never cached
    refused = sum(r["stage"] == "discover" for r in rejects)
    assert refused == 2 + 3
    assert warm.cached == info["counts"]["discovered"] - refused
    assert warm.content_hash == result.content_hash


def test_no_file_outside_a_source_root_is_opened(hostile_build):
    assert hostile_build["opened"] == [], "a sentinel outside every source root was opened"
    assert hostile_build["control"], "the inotify watch did not see a deliberate open"


def test_nothing_is_written_outside_out_and_the_cache(hostile_build):
    before, after = hostile_build["before"], hostile_build["after"]
    new = {p for p in after["root"] if p not in before["root"]}
    written = {p.split("/")[1] for p in new if p.startswith("build/")}
    assert written == {"release", "warm", "cache", ".cache.key"}  # the cache's HMAC key
    assert sorted(p for p in new if not p.startswith("build/")) == []
    changed = [p for p, v in before["root"].items() if after["root"].get(p) != v]
    changed.remove("build")  # the folder holding --out and the cache: new entries
    assert changed == [], "the library or the sentinels were modified"
    # the lock (.release.lock) and staging (.release.build-*) siblings existed during the
    # build only: none is left
    assert sorted(os.listdir(hostile_build["out"].parent)) == [
        ".cache.key",
        "cache",
        "release",
        "warm",
    ]
    assert after["cwd"] == before["cwd"]
    assert after["tmp"] == before["tmp"]


def test_memoized_realpath_follows_symlinks_like_realpath(tmp_path):
    """The folder memo of normalize.paths must give os.path.realpath's answer, including a
    symlink as the last component and `..` after a symlinked folder."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    root = tmp_path / "root"
    (root / "meshes").mkdir(parents=True)
    os.symlink(outside / "deep", root / "meshes" / "linked_dir")
    os.symlink(outside / "deep" / "x.obj", root / "meshes" / "linked.obj")
    cases = [
        root / "meshes" / "plain.obj",
        root / "meshes" / "linked.obj",
        root / "meshes" / "linked_dir" / "x.obj",
        root / "meshes" / "linked_dir" / ".." / "y.obj",
        root / "meshes" / ".." / "meshes" / "plain.obj",
        Path("relative") / "a.obj",
    ]
    with paths.memoized_realpaths():
        memo = [paths.realpath(c) for c in cases + cases]
        inside = [paths.is_inside(c, root) for c in cases]
    assert memo == [os.path.realpath(c) for c in cases + cases]
    assert inside == [True, False, False, False, True, False]


def test_an_entry_leaving_the_root_keys_the_cache_by_where_it_leads(builds, tmp_path):
    """An entry symlink to a file outside the root is rejected without being opened; pointing
    it at a file inside the root later recomputes the object instead of reusing the
    rejection."""
    root = tmp_path / "lib"
    write(root / "control", {"door.urdf": door_urdf()})
    outside = tmp_path / "outside.urdf"
    outside.write_text(door_urdf(), encoding="utf-8")
    os.symlink(outside, root / "door.urdf")
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        f"sources:\n  - {{name: links, format: urdf, path: {root}, license: test}}\n",
        encoding="utf-8",
    )
    assert hash_inputs([root / "door.urdf"], root) == {
        str(root / "door.urdf"): OUTSIDE + str(outside)
    }

    def build(out: str):
        return build_config(builds.config(sources, tmp_path / out, tmp_path / "cache"))

    watch = OpenWatch([outside])
    try:
        first = build("first")
        assert watch.events() == []
    finally:
        watch.close()
    assert first.info["counts"]["accepted"] == 1  # control/door.urdf
    rejects = pq.read_table(tmp_path / "first" / "manifest" / "rejects.parquet").to_pylist()
    assert [(r["source_id"], r["code"]) for r in rejects] == [("door", "path.symlink_escape")]
    (root / "door.urdf").unlink()
    os.symlink(root / "control" / "door.urdf", root / "door.urdf")
    second = build("second")
    assert second.computed == ["links__door"]
    assert second.info["counts"]["accepted"] == 2
