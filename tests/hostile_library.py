"""A library of hostile inputs, written by the tests (never committed), mixed into the generated
demo library: every kind is one object folder `hostile_<kind>` in the source of its format
(plain URDF, PartNet-Mobility, MJCF, SDF), with the exact rejection code it must get. Sentinel
files outside the library are what the hostile references try to reach; nothing may open them.

The URDF kinds of `tests/test_verify_hostile.py` (what `arena validate` is held to) are reused
as they are; the others are built here.

The shared runners `build` and `build_config` hold every hostile build to the bounds of issue
20: `bounded` (60 s, 4 GB over the process tree) and `confined` (nothing outside the source
roots, --out and the cache opened or written; discovered = accepted + rejected; every control
object, in a folder `control*`, accepted).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import shutil
import stat
import struct
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import yaml
from test_verify_hostile import HOSTILE, TWO_LINKS, joint, make_hostile, robot
from verify_assets import CUBE_OBJ, box, door_urdf, mesh, write

from flows.commands import build_release
from normalize.sources import load_sources
from samples.generate import generate_library

#: What every hostile case must stay within (issue 20): the command's wall clock, on 2 cores,
#: and the peak resident memory of its whole process tree (it and its worker processes)
MAX_SECONDS = 60.0
MAX_TREE_BYTES = 4 * 1024**3
SAMPLE_SECONDS = 0.05


IN_ACCESS, IN_OPEN = 0x1, 0x20
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)


class OpenWatch:
    """Linux inotify watches (IN_OPEN | IN_ACCESS) on files: `events()` lists the files any
    process opened or read since the watch started."""

    def __init__(self, files: list[Path]):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.files = {}
        for path in files:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN | IN_ACCESS)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch failed on {path}")
            self.files[wd] = path

    def events(self) -> list[tuple[Path, int]]:
        out = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                out.append((self.files.get(wd), mask))

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class Usage:
    """What a bounded block took: wall clock (s) and peak resident bytes of the process tree."""

    seconds: float = 0.0
    peak_bytes: int = 0


def _tree_rss(process) -> dict[tuple[int, float], int]:
    """Resident bytes of `process` and of every process below it, by (pid, start time)."""
    found = {}
    for p in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # ended meanwhile
            found[p.pid, p.create_time()] = p.memory_info().rss
    return found


def _tree_bytes(process, baseline: dict[tuple[int, float], int]) -> int:
    """Resident bytes of the processes below `process` started since `baseline` was taken,
    plus what the others (`process` itself, workers kept alive by earlier tests) gained over
    it; gone ones count 0."""
    return sum(rss - baseline.get(key, 0) for key, rss in _tree_rss(process).items())


@contextlib.contextmanager
def bounded(what: str, seconds: float = MAX_SECONDS, memory: int = MAX_TREE_BYTES):
    """Run the block while a thread samples the resident memory of this process and its
    worker processes every SAMPLE_SECONDS; then assert that it stayed within `seconds` and
    `memory`. This process, and the processes below it that earlier tests left running (a
    shared worker pool, a cluster), count with what they gained during the block: the command
    runs in the test's process, whose size depends on the tests before it. Yields the Usage,
    filled in when the block ends."""
    usage, done = Usage(), threading.Event()
    me = psutil.Process()
    baseline = _tree_rss(me)

    def sample() -> None:
        while not done.is_set():
            usage.peak_bytes = max(usage.peak_bytes, _tree_bytes(me, baseline))
            done.wait(SAMPLE_SECONDS)

    watcher = threading.Thread(target=sample, daemon=True)
    started = time.perf_counter()
    watcher.start()
    try:
        yield usage
    finally:
        usage.seconds = time.perf_counter() - started
        done.set()
        watcher.join()
        print(f"{what}: {usage.seconds:.1f} s, peak {usage.peak_bytes / 1024**3:.2f} GB")
    assert usage.seconds < seconds, f"{what} took {usage.seconds:.1f} s (bound {seconds:g} s)"
    assert usage.peak_bytes < memory, (
        f"{what} peaked at {usage.peak_bytes / 1024**3:.2f} GB (bound {memory / 1024**3:g} GB)"
    )


#: folders of control objects: in every build through `build` or `build_config` that
#: publishes a release, each must be accepted, and there must be one
CONTROL_PREFIX = "control"
#: files the runner plants beside the library (outside every root, --out and the cache) and
#: watches: nothing may open them
SENTINEL_FILES = ("arena-sentinel.obj", "arena-sentinel.urdf")


def tree(root: Path) -> dict[str, tuple]:
    """Every path under `root` with its type, size and modification time."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
        out[path.relative_to(root).as_posix()] = (kind, st.st_size, st.st_mtime_ns)
    return out


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


@contextlib.contextmanager
def confined(roots: list[Path], out: Path, cache_dir: Path | None, reads: list[Path]):
    """Run a build in the block, then assert what every hostile case must hold (issue 20):
    no file outside the source `roots`, --out and the cache was opened (inotify on every such
    file of the folder around them, `reads` excepted: the sources file, overrides, --previous,
    and on sentinels planted there), nothing was written outside --out and the cache, and, when
    a release was published, discovered = accepted + rejected for every source and every
    control object (folder `control*`) is accepted, there being at least one."""
    out = Path(out).absolute()
    cache = Path(cache_dir).absolute() if cache_dir is not None else None
    roots = [Path(r).absolute() for r in roots]
    reads = [Path(r).absolute() for r in reads]
    around = Path(os.path.commonpath([*roots, out, *([cache] if cache else []), *reads]))
    writes = [out] + ([cache, cache.with_name(f".{cache.name}.key")] if cache else [])
    planted = [
        around / name
        for name in SENTINEL_FILES
        if not (around / name).exists() and not _inside(around, roots + writes)
    ]
    for path in planted:
        path.write_text(CUBE_OBJ if path.suffix == ".obj" else door_urdf(), encoding="utf-8")
    # an earlier release's files hard-linked with the cache's are the cache's to read
    cached = {(p.stat().st_dev, p.stat().st_ino) for p in (cache or out).rglob("*") if p.is_file()}
    watched = [
        p
        for p in around.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and not _inside(p, roots + writes + reads)
        and (p.stat().st_dev, p.stat().st_ino) not in cached
    ]
    before, cwd = tree(around), sorted(os.listdir())
    watch = OpenWatch(watched)
    try:
        yield
        opened = sorted({str(path) for path, _ in watch.events()})
        seen = [True]
        if planted:  # the control: the watch does see a deliberate open
            planted[0].read_bytes()
            seen = watch.events()
    finally:
        watch.close()
        for path in planted:
            path.unlink()
    assert opened == [], f"opened outside the source roots, --out and the cache: {opened}"
    assert seen, "the inotify watch did not see a deliberate open"
    after = tree(around)
    changed = [
        p
        for p, v in after.items()
        if before.get(p) != v
        and not _inside(around / p, writes)
        and not any(around / p in w.parents for w in writes)  # a folder holding --out
        and (around / p) not in planted
    ]
    assert changed == [], "written outside --out and the cache"
    assert sorted(os.listdir()) == cwd
    if (out / "release.json").is_file():
        info = json.loads((out / "release.json").read_text(encoding="utf-8"))
        for source in info["sources"]:
            assert source["discovered"] == source["accepted"] + source["rejected"], source

        def rows(table: str) -> list[dict]:
            return pq.read_table(out / "manifest" / f"{table}.parquet").to_pylist()

        def control(row: dict) -> bool:
            return row["source_id"].startswith(CONTROL_PREFIX)

        controls = [r["source_id"] for r in rows("objects") if control(r)]
        refused = [(r["source_id"], r["code"], r["message"]) for r in rows("rejects") if control(r)]
        assert refused == [], f"control objects refused: {refused}"
        assert controls, "the build holds no control object"


def _sources_of(sources: Path) -> list:
    try:
        return load_sources(sources)
    except Exception:  # a hostile sources file, refused by the build itself
        return []


def _roots(configs) -> list[Path]:
    return [r for c in configs for r in (c.path, *c.package_roots)]


def build(builds, sources: Path, out: Path, cache_dir: Path | None, **options) -> int:
    """`arena build` of the sources file `sources` into `out` as the tests make it
    (`builds.command`, in batches of 8 objects), within the bounds and `confined`; its exit
    code. options: version, previous, overrides, replace, workers..."""
    reads = [sources] + [options[k] for k in ("previous", "overrides") if options.get(k)]
    roots = _roots(_sources_of(sources)) or [Path(sources).parent / "none"]
    with confined(roots, out, cache_dir, reads), bounded(f"the build of {sources}"):
        return builds.command(sources, out, cache_dir, **{"batch_size": 8, **options})


def build_config(config, seconds: float = MAX_SECONDS, confine: bool = True):
    """`build_release(config)` within the bounds (`seconds` for a library of many cases) and
    `confined` (unless `confine` is False: a test checking more itself); its BuildResult."""
    reads = [r for r in (config.sources_file, config.previous) if r is not None]
    guard = confined(_roots(config.sources), config.out, config.cache_dir, reads)
    with (
        guard if confine else contextlib.nullcontext(),
        bounded(f"the build into {config.out}", seconds),
    ):
        return build_release(config)


SOURCE_OF_SUFFIX = {".urdf": "sample_urdf", ".xml": "sample_mjcf", ".sdf": "sample_sdf"}
MAX_FILE_BYTES = 256 * 1024  # the URDF source's configured limit (every good file is below)

#: the sentinels, in the folder holding the library: "../../../secret.obj" from an object folder
SECRETS = ("secret.obj", "secret.urdf", "secret.xml", "secret.sdf")


@dataclass
class HostileLibrary:
    sources_file: Path
    library: Path
    sentinels: list[Path]
    expected: dict[tuple[str, str], str]  # (source, hostile folder) -> rejection code


def _mjcf(body: str, head: str = "", model: str = "m") -> str:
    return (
        f'<mujoco model="{model}">{head}<worldbody><body name="a">'
        '<geom type="box" size="0.1 0.1 0.1"/>'
        f'<body name="b" pos="0 0 0.3"><joint name="j" type="hinge" axis="0 0 1"/>'
        f'<geom type="box" size="0.1 0.1 0.1"/>{body}</body></body></worldbody></mujoco>'
    )


def _sdf(body: str, head: str = "") -> str:
    return (
        f'<?xml version="1.0"?>{head}<sdf version="1.9"><model name="m">'
        '<link name="a"/><link name="b"><pose>0 0 1 0 0 0</pose></link>'
        f"{body}</model></sdf>"
    )


_SDF_HINGE = (
    '<joint name="ab" type="revolute"><parent>a</parent><child>b</child>'
    "<axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>"
)
_PARTNET_META = '{"model_cat": "StorageFurniture", "anno_id": "x"}'


def _extra_kinds(outside: Path) -> dict[tuple[str, str], tuple[dict, str]]:
    """(source, kind) -> (files of the object folder, expected code): what test_verify_hostile
    does not cover, across the four formats."""
    secret_obj, secret_urdf = outside / "secret.obj", outside / "secret.urdf"
    entity = f'<!DOCTYPE robot [<!ENTITY x SYSTEM "file://{secret_urdf}">]>'
    half_cube = CUBE_OBJ[: len(CUBE_OBJ) // 2 + 3]  # cut in the middle of a line
    nan_cube = CUBE_OBJ.replace("v 0.5 0.5 0.5", "v nan 0.5 0.5")
    door = door_urdf(door_geometry=mesh("textured_objs/door.obj", (0, 0.4, 0), (0.02, 0.8, 1)))
    urdf = {
        "external_entity_sentinel": (
            {"m.urdf": f'<?xml version="1.0"?>{entity}<robot name="&x;"><link name="a"/></robot>'},
            "xml.external_entity",
        ),
        "mesh_file_url": (
            {"m.urdf": robot(f'<link name="a">{mesh(f"file://{secret_obj}")}</link>')},
            "path.outside_root",
        ),
        "too_large": (
            {"m.urdf": robot(f"<!-- {'x' * MAX_FILE_BYTES} -->" + TWO_LINKS)},
            "file.too_large",
        ),
        "truncated_obj": (
            {"m.urdf": robot(f'<link name="a">{mesh("cut.obj")}</link>'), "cut.obj": half_cube},
            "mesh.corrupt",
        ),
        "nan_obj": (
            {"m.urdf": robot(f'<link name="a">{mesh("nan.obj")}</link>'), "nan.obj": nan_cube},
            "mesh.corrupt",
        ),
        "empty_obj": (
            {"m.urdf": robot(f'<link name="a">{mesh("empty.obj")}</link>'), "empty.obj": ""},
            "mesh.corrupt",
        ),
        "mimic_target_missing": (
            {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", extra='<mimic joint="zz"/>'))},
            "model.mimic_target",
        ),
        "limit_overflow": (  # 1e999 parses as infinity: refused as if "inf" were written
            {
                "m.urdf": robot(
                    TWO_LINKS + joint("ab", "a", "b", "prismatic", limit='lower="0" upper="1e999"')
                )
            },
            "parse.infinite",
        ),
        "origin_overflow": (
            {
                "m.urdf": robot(
                    TWO_LINKS + joint("ab", "a", "b").replace('xyz="0 0 0.1"', 'xyz="1e999 0 0"')
                )
            },
            "parse.infinite",
        ),
        "package_outside": (
            {
                "m.urdf": robot(
                    f'<link name="a">{mesh("package://x/../../../../secret.obj")}</link>'
                )
            },
            "path.package_unresolved",
        ),
    }
    partnet = {
        "partnet_truncated": (
            {"mobility.urdf": door[: len(door) // 2], "meta.json": _PARTNET_META},
            "xml.truncated",
        ),
        "partnet_missing_mesh": (
            {"mobility.urdf": door, "meta.json": _PARTNET_META},
            "mesh.missing",
        ),
        "partnet_mesh_dotdot": (
            {"mobility.urdf": robot(f'<link name="a">{mesh("../../../secret.obj")}</link>')},
            "path.outside_root",
        ),
        "partnet_entity": (
            {"mobility.urdf": HOSTILE["entity_expansion"][0]["m.urdf"]},
            "xml.entity",
        ),
        "partnet_entry_symlink": ({}, "path.symlink_escape"),  # mobility.urdf -> the sentinel
    }
    mjcf = {
        "mjcf_include_cycle": (
            {
                "a.xml": _mjcf("", '<include file="b.xml"/>'),
                "b.xml": '<mujoco><include file="a.xml"/></mujoco>',
            },
            "mjcf.include_cycle",
        ),
        "mjcf_mesh_outside": (
            {
                "m.xml": _mjcf(
                    '<geom type="mesh" mesh="s"/>',
                    '<asset><mesh name="s" file="../../../secret.obj"/></asset>',
                )
            },
            "path.outside_root",
        ),
        "mjcf_malformed": ({"m.xml": _mjcf("")[:-20] + "</mujoco>"}, "xml.malformed"),
        "mjcf_closed_loop": (
            {
                "m.xml": _mjcf("").replace(
                    "</worldbody>",
                    '</worldbody><equality><connect body1="a" body2="b" anchor="0 0 0"/>'
                    "</equality>",
                )
            },
            "model.closed_loop",
        ),
        "mjcf_replicate_bomb": (  # 100 x 100 x 100 bodies from a few hundred bytes
            {
                "m.xml": _mjcf(
                    '<replicate count="100" offset="0.01 0 0"><replicate count="100" '
                    'offset="0 0.01 0"><replicate count="100" offset="0 0 0.01">'
                    '<body><geom type="sphere" size="0.001"/></body>'
                    "</replicate></replicate></replicate>"
                )
            },
            "model.too_large",
        ),
        "mjcf_external_entity": (
            {
                "m.xml": f'<!DOCTYPE mujoco [<!ENTITY x SYSTEM "file://{outside / "secret.xml"}">]>'
                + _mjcf("", model="&x;")
            },
            "xml.external_entity",
        ),
    }
    sdf = {
        "sdf_screw_without_pitch": (
            {
                "m.sdf": _sdf(
                    '<joint name="ab" type="screw"><parent>a</parent><child>b</child>'
                    "<axis><xyz>0 0 1</xyz></axis></joint>"
                )
            },
            "joint.screw_pitch_missing",
        ),
        "sdf_include_cycle": (
            {
                "m.sdf": _sdf(_SDF_HINGE + "<include><uri>other.sdf</uri></include>"),
                "other.sdf": _sdf(_SDF_HINGE + "<include><uri>m.sdf</uri></include>"),
            },
            "sdf.include_cycle",
        ),
        "sdf_include_bomb": (  # six files each including the next ten times: 111,111 links
            {
                f"m{i}.sdf": _sdf(
                    "".join(
                        f"<include><uri>m{i + 1}.sdf</uri><name>c{k}</name></include>"
                        for k in range(10)
                    )
                    if i < 5
                    else ""
                )
                for i in range(6)
            },
            "model.too_large",
        ),
        "sdf_nan_pose": (
            {
                "m.sdf": _sdf(_SDF_HINGE).replace(
                    "<pose>0 0 1 0 0 0</pose>", "<pose>nan 0 1 0 0 0</pose>"
                )
            },
            "parse.nan",
        ),
        "sdf_mesh_outside": (
            {
                "m.sdf": _sdf(_SDF_HINGE).replace(
                    '<link name="a"/>',
                    '<link name="a"><visual name="v"><geometry><mesh><uri>../../../secret.obj'
                    "</uri></mesh></geometry></visual></link>",
                )
            },
            "path.outside_root",
        ),
        "sdf_truncated": ({"m.sdf": _sdf(_SDF_HINGE)[:-30]}, "xml.truncated"),
    }
    kinds = {}
    for source, group in (
        ("sample_urdf", urdf),
        ("sample_partnet", partnet),
        ("sample_mjcf", mjcf),
        ("sample_sdf", sdf),
    ):
        for kind, value in group.items():
            kinds[(source, kind)] = value
    return kinds


def png_header(width: int, height: int) -> bytes:
    """A PNG file claiming width x height pixels, with one tiny compressed row: only a reader
    that trusts the header (and allocates for it) suffers."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def keyboard_urdf(keys: int, side: int = 32, pitch: float = 0.02, mimic: bool = False) -> str:
    """A plausible object at the size limit: `keys` prismatic keys on one board (a star of
    `keys` joints on the base, about as wide as a real keyboard); with `mimic`, each key
    mimics the one before it (a mimic chain as long as the keys: validated once, linearly)."""
    board = box((side * pitch, side * pitch, 0.02))
    links = [f'<link name="board">{board}</link>']
    joints = []
    for i in range(keys):
        x, y = (i % side - side / 2 + 0.5) * pitch, (i // side - side / 2 + 0.5) * pitch
        links.append(f'<link name="key{i}">{box((0.016, 0.016, 0.01))}</link>')
        joints.append(
            f'<joint name="press{i}" type="prismatic"><parent link="board"/>'
            f'<child link="key{i}"/><origin xyz="{x:.4f} {y:.4f} 0.015"/>'
            '<axis xyz="0 0 -1"/><limit lower="0" upper="0.004"/>'
            + (f'<mimic joint="press{i - 1}"/>' if mimic and i else "")
            + "</joint>"
        )
    return robot("".join(links) + "".join(joints))


def mimic_chain_urdf(joints: int) -> str:
    """A kinematic chain of `joints` revolute joints, each mimicking the one before it."""
    links = "".join(
        f'<link name="l{i}">{box((0.008, 0.008, 0.008))}</link>' for i in range(joints + 1)
    )
    chain = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        '<origin xyz="0.01 0 0"/><axis xyz="0 0 1"/><limit lower="-0.01" upper="0.01"/>'
        + (f'<mimic joint="j{i - 1}"/>' if i else "")
        + "</joint>"
        for i in range(joints)
    )
    return robot(links + chain)


def collada_instance_bomb(triangles: int = 20_000, fan: int = 10, depth: int = 4) -> str:
    """A COLLADA file of under 1 MB: one geometry, placed by nodes instancing nodes `fan`
    times over `depth` levels, so that decoding makes triangles x fan^depth triangles (2e8
    with the defaults, many GB): under every byte limit, its triangles counted before any
    expansion."""
    positions = " ".join(
        f"{i * 1e-3} {(i % 7) * 1e-3} {(i % 5) * 1e-3}" for i in range(triangles + 2)
    )
    corners = " ".join(f"{i} {i + 1} {i + 2}" for i in range(triangles))
    nodes = '<node id="n0"><instance_geometry url="#g"/></node>'
    for level in range(1, depth + 1):
        children = "".join(
            f'<node><translate>{k * 0.01} 0 0</translate><instance_node url="#n{level - 1}"/>'
            "</node>"
            for k in range(fan)
        )
        nodes += f'<node id="n{level}">{children}</node>'
    return (
        '<?xml version="1.0"?><COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" '
        'version="1.4.1"><asset><unit meter="1"/><up_axis>Z_UP</up_axis></asset>'
        '<library_geometries><geometry id="g"><mesh><source id="p">'
        f'<float_array id="pa" count="{3 * (triangles + 2)}">{positions}</float_array>'
        f'<technique_common><accessor source="#pa" count="{triangles + 2}" stride="3">'
        '<param name="X" type="float"/><param name="Y" type="float"/>'
        '<param name="Z" type="float"/></accessor></technique_common></source>'
        '<vertices id="v"><input semantic="POSITION" source="#p"/></vertices>'
        f'<triangles count="{triangles}"><input semantic="VERTEX" source="#v" offset="0"/>'
        f"<p>{corners}</p></triangles></mesh></geometry></library_geometries>"
        f"<library_nodes>{nodes}</library_nodes><library_visual_scenes>"
        f'<visual_scene id="s"><node><instance_node url="#n{depth}"/></node></visual_scene>'
        '</library_visual_scenes><scene><instance_visual_scene url="#s"/></scene></COLLADA>'
    )


def _gltf_with_image(image: str) -> str:
    """A one-triangle glTF whose material names the texture file `image`."""
    positions = base64.b64encode(struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)).decode()
    return json.dumps(
        {
            "asset": {"version": "2.0"},
            "buffers": [
                {"uri": f"data:application/octet-stream;base64,{positions}", "byteLength": 36}
            ],
            "bufferViews": [{"buffer": 0, "byteLength": 36}],
            "accessors": [
                {
                    "bufferView": 0,
                    "componentType": 5126,
                    "count": 3,
                    "type": "VEC3",
                    "min": [0, 0, 0],
                    "max": [1, 1, 0],
                }
            ],
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "material": 0}]}],
            "nodes": [{"mesh": 0}],
            "scenes": [{"nodes": [0]}],
            "images": [{"uri": image}],
            "textures": [{"source": 0}],
            "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        }
    )


HUGE_PNG = png_header(30_000, 30_000)  # 900 million pixels: 3.6 GB if decoded
LONG = "n" * 10_000  # a name of 10,000 characters
#: good objects of unusual size mixed into the hostile library: each must be accepted within
#: the bounds (source, folder) -> files
LARGE_CONTROLS = {
    ("sample_urdf", "large_keyboard"): {"m.urdf": keyboard_urdf(130)},  # > 128: no PyBullet
}


def _size_kinds() -> dict[tuple[str, str], tuple[dict, str]]:
    """Numbers, names, meshes and textures beyond their bounds (docs/limits.md), across the
    four formats."""
    two = TWO_LINKS + joint("ab", "a", "b")
    urdf_mesh = robot(f'<link name="a">{mesh("part.obj")}</link>')
    triangle = "v 0 0 0\nv 1 0 0\nv 0 1 0\n"
    return {
        ("sample_urdf", "origin_huge"): (
            {"m.urdf": robot(two.replace('xyz="0 0 0.1"', 'xyz="1e300 0 0"'))},
            "parse.out_of_range",
        ),
        ("sample_urdf", "limit_huge"): (
            {
                "m.urdf": robot(
                    TWO_LINKS + joint("ab", "a", "b", "prismatic", limit='lower="0" upper="1e308"')
                )
            },
            "parse.out_of_range",
        ),
        ("sample_urdf", "mass_huge"): (
            {
                "m.urdf": robot(
                    two.replace(
                        '<link name="a">',
                        '<link name="a"><inertial><mass value="1e300"/><inertia ixx="1" '
                        'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>',
                    )
                )
            },
            "parse.out_of_range",
        ),
        ("sample_urdf", "scale_huge"): (
            {
                "m.urdf": robot(f'<link name="a">{mesh("c.obj", scale=(1e300, 1, 1))}</link>'),
                "c.obj": CUBE_OBJ,
            },
            "parse.out_of_range",
        ),
        ("sample_urdf", "link_name_too_long"): (
            {"m.urdf": robot(two.replace('"b"', f'"{LONG}"'))},
            "name.too_long",
        ),
        ("sample_urdf", "joint_name_too_long"): (
            {"m.urdf": robot(TWO_LINKS + joint(LONG, "a", "b"))},
            "name.too_long",
        ),
        ("sample_urdf", "mesh_name_too_long"): (
            {"m.urdf": robot(f'<link name="a">{mesh(LONG + ".obj")}</link>')},
            "name.too_long",
        ),
        ("sample_urdf", "obj_too_many_triangles"): (  # 16 MB, under the 256 MiB mesh limit
            {"m.urdf": urdf_mesh, "part.obj": triangle + "f 1 2 3\n" * 2_000_001},
            "mesh.too_many_triangles",
        ),
        ("sample_urdf", "obj_polygon_bomb"): (  # one face line of 3 million corners
            {"m.urdf": urdf_mesh, "part.obj": triangle + "f " + "1 2 3 " * 1_000_000 + "\n"},
            "mesh.too_many_triangles",
        ),
        # 999 keys, each mimicking the one before: validated in linear time, then refused
        # because yourdfpy follows one level of mimic only (its keys stay at rest)
        ("sample_partnet", "partnet_mimic_chain"): (
            {"mobility.urdf": keyboard_urdf(999, mimic=True)},
            "simulator.agreement",
        ),
        ("sample_partnet", "partnet_deep_chain"): (  # MuJoCo cannot nest 300 bodies
            {"mobility.urdf": mimic_chain_urdf(300)},
            "model.too_deep",
        ),
        ("sample_urdf", "collada_instance_bomb"): (
            {
                "m.urdf": robot(f'<link name="a">{mesh("part.dae")}</link>'),
                "part.dae": collada_instance_bomb(),
            },
            "mesh.too_many_triangles",
        ),
        ("sample_urdf", "mtl_texture_too_large"): (
            {
                "m.urdf": urdf_mesh,
                "part.obj": "mtllib part.mtl\nusemtl m\n" + CUBE_OBJ,
                "part.mtl": "newmtl m\nmap_Kd big.png\n",
                "big.png": HUGE_PNG,
            },
            "texture.too_large",
        ),
        ("sample_urdf", "gltf_texture_too_large"): (
            {
                "m.urdf": robot(f'<link name="a">{mesh("part.gltf")}</link>'),
                "part.gltf": _gltf_with_image("big.png"),
                "big.png": HUGE_PNG,
            },
            "texture.too_large",
        ),
        ("sample_partnet", "partnet_origin_huge"): (
            {"mobility.urdf": robot(two.replace('xyz="0 0 0.1"', 'xyz="0 1e300 0"'))},
            "parse.out_of_range",
        ),
        ("sample_mjcf", "mjcf_size_huge"): (
            {"m.xml": _mjcf('<geom type="box" size="1e300 0.1 0.1"/>')},
            "parse.out_of_range",
        ),
        ("sample_mjcf", "mjcf_range_huge"): (
            {"m.xml": _mjcf("").replace('axis="0 0 1"/>', 'axis="0 0 1" range="0 1e308"/>')},
            "parse.out_of_range",
        ),
        ("sample_mjcf", "mjcf_name_too_long"): (
            {"m.xml": _mjcf("").replace('name="b"', f'name="{LONG}"')},
            "name.too_long",
        ),
        ("sample_mjcf", "mjcf_texture_too_large"): (
            {
                "m.xml": _mjcf(
                    "",
                    '<asset><texture name="t" type="2d" file="big.png"/>'
                    '<material name="mat" texture="t"/></asset>',
                ),
                "big.png": HUGE_PNG,
            },
            "texture.too_large",
        ),
        ("sample_mjcf", "mjcf_builtin_texture_huge"): (  # 6 x 30000^2 RGB pixels generated
            {
                "m.xml": _mjcf(
                    "",
                    '<asset><texture name="sky" type="skybox" builtin="gradient" width="30000" '
                    'height="30000"/></asset>',
                )
            },
            "texture.too_large",
        ),
        ("sample_mjcf", "mjcf_hfield_huge"): (  # 10^10 elevations: 40 GB of floats
            {
                "m.xml": _mjcf(
                    "",
                    '<asset><hfield name="h" nrow="100000" ncol="100000" size="1 1 1 1"/></asset>',
                )
            },
            "texture.too_large",
        ),
        ("sample_sdf", "sdf_pose_huge"): (
            {
                "m.sdf": _sdf(_SDF_HINGE).replace(
                    "<pose>0 0 1 0 0 0</pose>", "<pose>1e300 0 1 0 0 0</pose>"
                )
            },
            "parse.out_of_range",
        ),
        ("sample_sdf", "sdf_name_too_long"): (
            {
                "m.sdf": _sdf(_SDF_HINGE)
                .replace('name="b"', f'name="{LONG}"')
                .replace("<child>b<", f"<child>{LONG}<")
            },
            "name.too_long",
        ),
    }


ALLOWANCES = "arena-allowances.yaml"
#: 600 bytes of YAML whose aliases expand to 9**9 (387 million) strings
ALIAS_BOMB = "".join(
    f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}' if i else 'lol'] * 9)}]\n"
    for i in range(9)
)
SPARSE_BYTES = 100 * 1024**3  # a 100 GB file taking a few KB on disk


def _special(path: Path, kind: str) -> bool:
    """Make `path` a FIFO, a /dev/zero-like character device or a sparse 100 GB file; False
    when this system does not allow it (a device node needs CAP_MKNOD)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # what /dev/zero is
        except OSError:
            return False
    else:
        with open(path, "wb") as f:
            f.write(b"v 0 0 0\n")
            f.truncate(SPARSE_BYTES)
    return True


def write_special_files(library: Path) -> dict[tuple[str, str], str]:
    """Objects whose entry, mesh, material, include or allowances file is a FIFO, a device
    node or a huge sparse file: a plain open or read of any of them blocks or never ends. Each
    is refused with its code without hanging the build (or hashing 100 GB for the cache)."""
    cube_with_mtl = "mtllib part.mtl\n" + CUBE_OBJ
    urdf_mesh = robot(f'<link name="a">{mesh("part.obj")}</link>')
    kinds = {
        ("sample_urdf", "fifo_entry"): ({}, "m.urdf", "fifo", "file.not_regular"),
        ("sample_urdf", "fifo_mesh"): (
            {"m.urdf": urdf_mesh},
            "part.obj",
            "fifo",
            "file.not_regular",
        ),
        ("sample_urdf", "device_mesh"): (
            {"m.urdf": urdf_mesh},
            "part.obj",
            "device",
            "file.not_regular",
        ),
        ("sample_urdf", "sparse_mesh"): (
            {"m.urdf": urdf_mesh},
            "part.obj",
            "sparse",
            "mesh.too_large",
        ),
        ("sample_urdf", "fifo_material"): (
            {"m.urdf": urdf_mesh, "part.obj": cube_with_mtl},
            "part.mtl",
            "fifo",
            "file.not_regular",
        ),
        ("sample_urdf", "allowances_alias_bomb"): (
            {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b")), ALLOWANCES: ALIAS_BOMB},
            None,
            None,
            "allowances.file",
        ),
        ("sample_urdf", "fifo_allowances"): (
            {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b"))},
            ALLOWANCES,
            "fifo",
            "allowances.file",
        ),
        ("sample_mjcf", "mjcf_fifo_mesh"): (
            {
                "m.xml": _mjcf(
                    '<geom type="mesh" mesh="s"/>',
                    '<asset><mesh name="s" file="part.obj"/></asset>',
                )
            },
            "part.obj",
            "fifo",
            "file.not_regular",
        ),
        ("sample_sdf", "sdf_fifo_include"): (
            {"m.sdf": _sdf(_SDF_HINGE + "<include><uri>part.sdf</uri></include>")},
            "part.sdf",
            "fifo",
            "file.not_regular",
        ),
    }
    expected = {}
    for (source, kind), (files, special, how, code) in kinds.items():
        folder = write(library / source / f"hostile_{kind}", files)
        if special is None or _special(folder / special, how):
            expected[(source, f"hostile_{kind}")] = code
        else:
            shutil.rmtree(folder)
    return expected


def write_hostile_library(root: Path) -> HostileLibrary:
    """The demo library (40 good objects in 5 sources) under root/library plus every hostile
    kind, and the sentinels in `root` itself (outside every source root)."""
    library = root / "library"
    generate_library(library, n=0, seed=0)
    sentinels = [root / name for name in SECRETS]
    sentinels[0].write_text(CUBE_OBJ, encoding="utf-8")
    sentinels[1].write_text(door_urdf(), encoding="utf-8")
    sentinels[2].write_text(_mjcf(""), encoding="utf-8")
    sentinels[3].write_text(_sdf(_SDF_HINGE), encoding="utf-8")

    expected: dict[tuple[str, str], str] = {}
    for kind, (files, code) in HOSTILE.items():
        suffixes = {Path(name).suffix for name in files} or {".urdf"}  # an entry symlink
        [suffix] = suffixes & set(SOURCE_OF_SUFFIX)
        source = SOURCE_OF_SUFFIX[suffix]
        folder = make_hostile(library / source, kind, sentinels[0])
        folder.rename(folder.with_name(f"hostile_{kind}"))
        expected[(source, f"hostile_{kind}")] = code
    for (source, kind), (files, code) in {**_extra_kinds(root), **_size_kinds()}.items():
        folder = write(library / source / f"hostile_{kind}", files)
        folder.mkdir(parents=True, exist_ok=True)
        expected[(source, f"hostile_{kind}")] = code
    # a directory named like a URDF file
    (library / "sample_urdf" / "hostile_directory" / "m.urdf").mkdir(parents=True)
    expected[("sample_urdf", "hostile_directory")] = "file.is_directory"
    # a PartNet-Mobility entry that is a symlink leaving the root
    os.symlink(
        sentinels[1], library / "sample_partnet" / "hostile_partnet_entry_symlink" / "mobility.urdf"
    )

    # a PartNet-Mobility root that is an object folder itself, and a sub-folder named like the
    # root: both are source_id "sample_partnet", so both are refused, never one lost
    partnet = library / "sample_partnet"
    write(partnet, {"mobility.urdf": door_urdf()})
    write(partnet / "sample_partnet", {"mobility.urdf": door_urdf()})
    expected[("sample_partnet", "sample_partnet")] = "id.collision"

    expected.update(write_special_files(library))
    for (source, folder), files in LARGE_CONTROLS.items():
        write(library / source / folder, files)
    # symlinked folders: leading out of the root (to the sentinels' folder), refused and
    # counted; leading back up inside it (a loop), walked once under the real path
    for source in ("sample_urdf", "sample_partnet", "sample_mjcf"):
        os.symlink(root, library / source / "hostile_folder_link")
        expected[(source, "hostile_folder_link")] = "path.symlink_escape"
    os.symlink("..", library / "sample_urdf" / "hostile_directory" / "loop")

    sources_file = library / "sources.yaml"
    data = yaml.safe_load(sources_file.read_text(encoding="utf-8"))
    for entry in data["sources"]:
        if entry["name"] == "sample_urdf":
            entry["max_file_bytes"] = MAX_FILE_BYTES
    text = sources_file.read_text(encoding="utf-8").split("\n", 1)[0] + "\n"  # keep the header
    sources_file.write_text(text + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return HostileLibrary(sources_file, library, sentinels, expected)
