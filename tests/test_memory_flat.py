"""What a worker process keeps from one object to the next stays bounded: the simulators' own
caches would otherwise grow with every object a long-lived worker computes (about 4 MB per
realistic object, 5.6 GB per worker at 2,000 objects before these were bounded)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import mujoco

from normalize.adapters import discover
from normalize.sources import load_sources
from pipeline import chain
from samples.generate import generate_library


def test_mujocos_asset_cache_is_empty_and_few_meshes_are_kept_after_each_object(
    tmp_path, monkeypatch
):
    """The process's parsed meshes are cut down to KEPT_BYTES after each object (here 1 byte:
    the most recent mesh); without that a worker's memory grew by 256 MB over its first
    thousand realistic objects."""
    from normalize.meshes import store

    monkeypatch.setattr(store, "KEPT_BYTES", 1)
    store.clear_cache()
    generate_library(tmp_path / "library", n=3, seed=1)
    sources = load_sources(tmp_path / "library" / "sources.yaml")
    candidates = [c for source in sources for c in discover(source)]
    staging = tmp_path / "staging"
    (staging / "objects").mkdir(parents=True)
    settings = chain.BatchSettings(
        staging=staging,
        cache_dir=None,
        overrides=(),
        versions=chain.current_versions(),
        object_seconds=None,
        object_memory=None,
    )
    cache = mujoco.mj_getCache()
    for outcome in chain.batch_outcomes(candidates[:2], settings):
        assert outcome.accepted, outcome.reject  # loaded in MuJoCo and rendered
        assert mujoco.mj_getCacheSize(cache) == 0
        assert len(store._cache) == 1


PYBULLET_LOADS = """
import ctypes, gc, sys
from pathlib import Path
import numpy as np
import pybullet
from verify.checks.simulator import _bullet_client

folder = Path(sys.argv[1])
rng = np.random.default_rng(0)

def write(i):
    vertices = rng.normal(size=(6000, 3))
    faces = rng.integers(0, 6000, size=(12000, 3))
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    (folder / f"part{i}.obj").write_text("\\n".join(lines))
    (folder / f"part{i}.urdf").write_text(
        f'<robot name="r{i}"><link name="base"><inertial><mass value="1"/>'
        '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
        f'<collision><geometry><mesh filename="part{i}.obj"/></geometry></collision>'
        "</link></robot>"
    )

def rss_mib():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

for i in range(40):
    write(i)
for i in range(5):  # the first loads set up what every load needs
    pybullet.loadURDF(str(folder / f"part{i}.urdf"), physicsClientId=_bullet_client(pybullet))
before = rss_mib()
for i in range(5, 40):
    pybullet.loadURDF(str(folder / f"part{i}.urdf"), physicsClientId=_bullet_client(pybullet))
print(rss_mib() - before)
"""


def test_pybullet_keeps_no_mesh_of_earlier_objects(tmp_path):
    """35 loads of distinct 12k-triangle meshes: with PyBullet's file cache on, the process
    grew by about 30 MiB; off, it stays within a few MiB."""
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PYBULLET_LOADS), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    grown = float(run.stdout.strip().splitlines()[-1])
    assert grown < 15, f"the process grew by {grown:.0f} MiB over 35 loads"


def test_every_cache_of_the_mesh_modules_is_bounded():
    """Module-level dicts and sets of `normalize.meshes` either keep a bounded number of
    entries (`Recent`), or are bounded in bytes (the parsed meshes), or are emptied after each
    object (meshes given as data); a new unbounded one fails here."""
    import importlib
    import pkgutil

    from normalize import meshes
    from normalize.meshes.store import Recent

    allowed = {("store", "_cache"), ("store", "_generated")}
    unbounded = []
    for info in pkgutil.iter_modules(meshes.__path__):
        module = importlib.import_module(f"normalize.meshes.{info.name}")
        for name, value in vars(module).items():
            kept = isinstance(value, (dict, set)) and not isinstance(value, Recent)
            constant = name.startswith("__") or name.lstrip("_").isupper()
            if kept and not constant and (info.name, name) not in allowed:
                unbounded.append(f"{info.name}.{name}")
    assert unbounded == []


def test_recent_keeps_the_most_recently_used_entries():
    from normalize.meshes.store import Recent

    recent = Recent(2)
    recent["a"], recent["b"] = 1, 2
    assert recent["a"] == 1  # read: now the most recent
    recent["c"] = 3
    assert list(recent) == ["a", "c"]
    assert recent.get("a") == 1 and recent.get("b") is None  # get reads as [] does
    recent["d"] = 4
    assert list(recent) == ["a", "d"]
