"""Checks on a built release as users get it (used by the demo and the corpus release tests):
every shipped file loads quietly in every loader, each in its own process; the objects folder
is itself a valid source whose normalization changes nothing; masses add up."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import yourdfpy
from lxml import etree

from normalize.adapters import discover
from normalize.adapters.mjcf.geometry import VISIBLE_GROUPS
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig
from normalize.urdf import read_object
from normalize.usd_writer import USD_NAME
from verify.checks import usd
from verify.loaders import load_in_subprocess, yourdfpy_problems
from verify.urdf_spec import urdf_spec_problems
from verify.validate import validate_paths


def loud_files(release: Path) -> dict[str, list[str]]:
    """loader -> ['<file>: <what it printed or why it failed>'] over every shipped URDF and
    MJCF: any printed line counts (joints whose source range is [0, 0] are written fixed, so
    MuJoCo has no zero-length limit to warn about)."""
    objects = Path(release) / "objects"
    urdfs = sorted(objects.glob("*/object.urdf"))
    mjcfs = sorted(objects.glob("*/object.xml"))
    assert urdfs and len(mjcfs) == len(urdfs), "every object ships a URDF and an MJCF"
    loud: dict[str, list[str]] = {}
    for loader, files in (
        ("yourdfpy", urdfs),
        ("mujoco", urdfs),
        ("pybullet", urdfs),
        ("mujoco", mjcfs),
    ):
        for result in load_in_subprocess(loader, files):
            lines = [line for line in result.output.splitlines() if line.strip()]
            if not result.loaded or lines:
                where = Path(result.path).relative_to(objects).as_posix()
                loud.setdefault(loader, []).append(f"{where}: {'; '.join(lines)}")
    return loud


def renormalized_differences(release: Path, out: Path) -> list[str]:
    """Normalize every object of `release/objects` again (a URDF source) and list what differs
    from the shipped object: joints, links, inertials and mesh contents."""
    source = SourceConfig(
        name="release",
        format="urdf",
        path=Path(release) / "objects",
        license="release",
        entry="**/object.urdf",  # not object_source_collision.urdf beside it
    )
    differences = []
    candidates = discover(source)
    assert len(candidates) == len(list((Path(release) / "objects").glob("*/object.urdf")))
    for candidate in candidates:
        shipped_path = Path(release) / "objects" / f"{candidate.source_id}.urdf"
        again = normalize_candidate(candidate, out)
        shipped, renormalized = read_object(shipped_path), read_object(again.urdf_path)
        found = object_differences(shipped, renormalized)
        if not found:
            found = mesh_differences(
                shipped_path.parent, shipped, again.urdf_path.parent, renormalized
            )
        differences += [f"{candidate.source_id}: {d}" for d in found]
    return differences


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=1e-12, atol=1e-12))


def _mesh_digest(folder: Path, g) -> str | None:
    if g.kind != "mesh":
        return None
    return hashlib.sha256((folder / g.filename).read_bytes()).hexdigest()


def object_differences(shipped, again) -> list[str]:
    """What differs between two written objects (names, joints, inertials, shapes)."""
    out = []
    if [j.name for j in shipped.joints] != [j.name for j in again.joints]:
        return ["joints differ in names or order"]
    if [link.name for link in shipped.links] != [link.name for link in again.links]:
        return ["links differ in names or order"]
    for a, b in zip(shipped.joints, again.joints, strict=True):
        same = (a.type, a.parent, a.child, a.mimic and a.mimic.joint) == (
            b.type,
            b.parent,
            b.child,
            b.mimic and b.mimic.joint,
        )
        numbers = [(a.origin, b.origin), (a.axis, b.axis), ([a.pitch], [b.pitch])]
        if a.mimic is not None and b.mimic is not None:
            numbers.append(
                ([a.mimic.multiplier, a.mimic.offset], [b.mimic.multiplier, b.mimic.offset])
            )
        limits_same = (a.lower, a.upper) == (b.lower, b.upper) or _close(
            [a.lower, a.upper], [b.lower, b.upper]
        )
        if not (same and limits_same and all(_close(x, y) for x, y in numbers)):
            out.append(f"joint {a.name} differs")
        if (a.effort, a.velocity) != (b.effort, b.velocity):
            out.append(f"joint {a.name}: effort or velocity differs")
    for a, b in zip(shipped.links, again.links, strict=True):
        ia, ib = a.inertial, b.inertial
        if (ia is None) != (ib is None) or (
            ia is not None
            and not (
                _close([ia.mass], [ib.mass])
                and _close(ia.com, ib.com)
                and _close(ia.inertia, ib.inertia)
            )
        ):
            out.append(f"link {a.name}: inertial differs")
        for kind in ("visuals", "collisions"):
            ga, gb = getattr(a, kind), getattr(b, kind)
            if [(g.kind, g.name) for g in ga] != [(g.kind, g.name) for g in gb] or not all(
                _close(x.origin, y.origin) and _close(x.scale, y.scale) and _close(x.size, y.size)
                for x, y in zip(ga, gb, strict=True)
            ):
                out.append(f"link {a.name}: {kind} differ")
    return out


def mesh_differences(folder_a: Path, a, folder_b: Path, b) -> list[str]:
    """Shapes whose mesh files differ in content between two written objects."""
    out = []
    for la, lb in zip(a.links, b.links, strict=True):
        pairs = zip((*la.visuals, *la.collisions), (*lb.visuals, *lb.collisions), strict=True)
        for ga, gb in pairs:
            if _mesh_digest(folder_a, ga) != _mesh_digest(folder_b, gb):
                out.append(f"link {la.name}: mesh {ga.filename} differs")
    return out


def mjcf_role_differences(release: Path) -> list[str]:
    """Links whose object.xml geoms, as an MJCF reader sorts them (shown by MuJoCo's viewer by
    default: a visual; with contacts: a collision), are not the object.urdf's visuals and
    collisions: a collision geom shown by default would read back as a visual too."""
    import mujoco

    out = []
    for urdf in sorted((Path(release) / "objects").glob("*/object.urdf")):
        model = mujoco.MjModel.from_xml_path(str(urdf.with_name("object.xml")))
        for link in read_object(urdf).links:
            body = model.body(link.name).id
            geoms = range(
                model.body_geomadr[body], model.body_geomadr[body] + model.body_geomnum[body]
            )
            visuals = sum(int(model.geom_group[g]) in VISIBLE_GROUPS for g in geoms)
            collisions = sum(
                bool(model.geom_contype[g] or model.geom_conaffinity[g]) for g in geoms
            )
            if (visuals, collisions) != (len(link.visuals), len(link.collisions)):
                out.append(
                    f"{urdf.parent.name}/{link.name}: the MJCF reads as {visuals} visuals and "
                    f"{collisions} collisions, the URDF has {len(link.visuals)} and "
                    f"{len(link.collisions)}"
                )
    return out


def validation_failures(release: Path) -> list[str]:
    """`arena validate <release>/objects`: the objects that do not pass (warnings allowed)."""
    reports = validate_paths([Path(release) / "objects"])
    return [f"{r.object_id}: {r.status} {r.failures[:1]}" for r in reports if r.status == "fail"]


def mass_problems(release: Path) -> list[str]:
    """Links with shapes but no mass, and objects whose mass is not the sum of their links."""
    objects = pq.read_table(Path(release) / "manifest" / "objects.parquet").to_pylist()
    links = pq.read_table(Path(release) / "manifest" / "links.parquet").to_pylist()
    out = []
    totals: dict[str, float] = {}
    for row in objects:
        obj = read_object(Path(release) / row["urdf_path"])
        for link in obj.links:
            if (link.visuals or link.collisions) and link.inertial is None:
                out.append(f"{row['object_id']}: link {link.name} has shapes but no mass")
    for row in links:
        totals[row["object_id"]] = totals.get(row["object_id"], 0.0) + (row["mass"] or 0.0)
    for row in objects:
        if not np.isclose(row["mass"], totals[row["object_id"]], rtol=1e-12, atol=0.0):
            out.append(
                f"{row['object_id']}: mass {row['mass']} != links' {totals[row['object_id']]}"
            )
    return out


def shipped_files(release: Path) -> tuple[list[Path], list[Path]]:
    rows = pq.read_table(release / "manifest" / "objects.parquet").to_pylist()
    urdfs = [release / row["urdf_path"] for row in rows]
    return urdfs, [path.with_name("object.xml") for path in urdfs]


def assert_files_meet_their_specifications(release: Path) -> None:
    urdfs, mjcfs = shipped_files(release)
    assert urdfs
    for path in urdfs:
        urdf = yourdfpy.URDF.load(str(path), load_meshes=False)
        assert yourdfpy_problems(urdf) == [], path
        assert urdf_spec_problems(etree.parse(str(path)).getroot()) == [], path
    compiled = load_in_subprocess("mujoco", mjcfs)
    assert [r.path for r in compiled if not (r.loaded and r.output == "")] == []
    if usd.installed():  # every object.usda passes usdchecker's rules, warnings included
        failed = [r for p in urdfs for r in usd.compliance_results(p.with_name(USD_NAME))]
        assert [r.message for r in failed if not r.passed] == []
