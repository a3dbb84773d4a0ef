"""Small assets built by the verify tests themselves: a cabinet with a door, and helpers to write
them (and broken variants) into a temporary folder."""

from __future__ import annotations

import io
from pathlib import Path

from normalize.sources import SourceConfig

CUBE_OBJ = """v -0.5 -0.5 -0.5
v 0.5 -0.5 -0.5
v 0.5 0.5 -0.5
v -0.5 0.5 -0.5
v -0.5 -0.5 0.5
v 0.5 -0.5 0.5
v 0.5 0.5 0.5
v -0.5 0.5 0.5
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 2 3 7
f 2 7 6
f 3 4 8
f 3 8 7
f 4 1 5
f 4 5 8
"""


def box(size, xyz=(0.0, 0.0, 0.0)) -> str:
    """A <visual> and a <collision> box."""
    origin = f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/>'
    shape = f'<geometry><box size="{size[0]} {size[1]} {size[2]}"/></geometry>'
    return f"<visual>{origin}{shape}</visual><collision>{origin}{shape}</collision>"


def mesh(filename: str, xyz=(0.0, 0.0, 0.0), scale=(1.0, 1.0, 1.0)) -> str:
    origin = f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/>'
    shape = f'<geometry><mesh filename="{filename}" scale="{scale[0]} {scale[1]} {scale[2]}"/>'
    return f"<visual>{origin}{shape}</geometry></visual>"


def door_urdf(
    hinge_offset: float = 0.0,
    hinge_x: float = 0.26,
    lower: float = 0.0,
    upper: float = 1.5,
    door_geometry: str | None = None,
    frame_geometry: str | None = None,
    extra: str = "",
) -> str:
    """A cabinet body (0.5 x 0.8 x 1.0 m) with a door hinged at its +y edge, opening outwards.
    hinge_offset moves the hinge away from the door along +y while the door stays in place at
    rest; hinge_x moves hinge and door together in front of the body (0.26: touching it)."""
    frame = box((0.5, 0.8, 1.0)) if frame_geometry is None else frame_geometry
    door = door_geometry
    if door is None:
        door = box((0.02, 0.8, 1.0), (0.0, -0.4 - hinge_offset, 0.0))
    return f"""<?xml version="1.0"?>
<robot name="cabinet">
  <link name="frame">{frame}</link>
  <link name="door">{door}</link>
  <joint name="hinge" type="revolute">
    <origin xyz="{hinge_x} {0.4 + hinge_offset} 0"/>
    <parent link="frame"/>
    <child link="door"/>
    <axis xyz="0 0 1"/>
    <limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/>
  </joint>{extra}
</robot>
"""


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    """Write `files` (relative path -> text or bytes) below `folder`; returns `folder`."""
    for relative, content in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return folder


def urdf_source(root: Path, name: str = "tests", **settings) -> SourceConfig:
    return SourceConfig(
        name=name, format="urdf", path=Path(root).resolve(), license="test", **settings
    )


def hollow_cabinet_urdf(part: str, *, faulty: bool = False) -> str:
    """A carcass 0.4 deep (x), 0.6 wide (y) and 0.8 tall made of 2 cm walls, open at the front
    (+x), with one moving part that touches nothing at rest: `part="door"`, a door 1 cm in
    front of the opening hinged at its -y edge, opening outwards (faulty: the hinge axis
    reversed, so it swings into the carcass); `part="drawer"`, a drawer inside with 3 cm to the
    back wall, sliding 0.3 m out of the front (faulty: 0.3 m backwards, through the back
    wall)."""
    walls = "".join(
        box(size, xyz)
        for size, xyz in (
            ((0.02, 0.6, 0.8), (-0.19, 0.0, 0.4)),  # back
            ((0.4, 0.02, 0.8), (0.0, -0.29, 0.4)),  # sides
            ((0.4, 0.02, 0.8), (0.0, 0.29, 0.4)),
            ((0.4, 0.56, 0.02), (0.0, 0.0, 0.01)),  # bottom and top
            ((0.4, 0.56, 0.02), (0.0, 0.0, 0.79)),
        )
    )
    if part == "door":
        axis = "0 0 1" if faulty else "0 0 -1"
        moving = box((0.02, 0.58, 0.78), (0.0, 0.29, 0.4))
        joint = f"""<joint name="hinge" type="revolute">
    <origin xyz="0.22 -0.29 0"/><parent link="carcass"/><child link="door"/>
    <axis xyz="{axis}"/><limit lower="0" upper="1.5" effort="1" velocity="1"/>
  </joint>"""
    else:
        lower, upper = ("-0.3", "0") if faulty else ("0", "0.3")
        moving = box((0.3, 0.5, 0.15), (0.0, 0.0, 0.0))
        joint = f"""<joint name="slide" type="prismatic">
    <origin xyz="0 0 0.2"/><parent link="carcass"/><child link="{part}"/>
    <axis xyz="1 0 0"/><limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/>
  </joint>"""
    return f"""<?xml version="1.0"?>
<robot name="cabinet">
  <link name="carcass">{walls}</link>
  <link name="{part}">{moving}</link>
  {joint}
</robot>
"""


#: The walls of `hollow_cabinet_urdf`'s carcass (size, centre), open at the front (+x), as
#: boxes that do not overlap each other (the sides, bottom and top stop at the back wall).
WALLS = (
    ((0.02, 0.6, 0.8), (-0.19, 0.0, 0.4)),
    ((0.38, 0.02, 0.8), (0.01, -0.29, 0.4)),
    ((0.38, 0.02, 0.8), (0.01, 0.29, 0.4)),
    ((0.38, 0.56, 0.02), (0.01, 0.0, 0.01)),
    ((0.38, 0.56, 0.02), (0.01, 0.0, 0.79)),
)


def shell_obj() -> bytes:
    """The carcass as one mesh (an OBJ of the five walls): MuJoCo collides its convex hull."""
    import trimesh

    walls = [trimesh.creation.box(extents=size) for size, _ in WALLS]
    for wall, (_, centre) in zip(walls, WALLS, strict=True):
        wall.apply_translation(centre)
    out = io.BytesIO()
    trimesh.util.concatenate(walls).export(out, file_type="obj")
    return out.getvalue()


def one_mesh_carcass(urdf: str) -> str:
    """`urdf` with the carcass link's boxes replaced by the one shell mesh."""
    start = urdf.index('<link name="carcass">') + len('<link name="carcass">')
    end = urdf.index("</link>", start)
    shape = '<geometry><mesh filename="shell.obj"/></geometry>'
    return f"{urdf[:start]}<visual>{shape}</visual><collision>{shape}</collision>{urdf[end:]}"
