"""The required elements and attributes of the URDF XML specification (the ones urdfdom, the
reference parser of ROS, refuses a file without), checked on a parsed file:

    problems = urdf_spec_problems(etree.parse(path).getroot())   # [] when the file meets them

yourdfpy's `validate()` checks part of this; urdfdom is a C++ library with no maintained Python
wheel, so its requirements are read off the specification here: every `<robot>`, `<link>` and
`<joint>` named; a joint's `type` one of the six, with `<parent link>` and `<child link>`; a
`<limit>` on every revolute and prismatic joint, and `effort` and `velocity` on every
`<limit>`; `<mass value>` and the six moments of `<inertia>`; one shape per `<geometry>` with
its size attributes; `<mimic joint>`.
"""

from __future__ import annotations

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
SHAPE_ATTRIBUTES = {
    "box": ("size",),
    "cylinder": ("radius", "length"),
    "sphere": ("radius",),
    "mesh": ("filename",),
}
INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _missing(element, attributes, where: str) -> list[str]:
    return [
        f"{where}: <{element.tag}> lacks the required attribute {a!r}"
        for a in attributes
        if element.get(a) is None
    ]


def _geometry_problems(geometry, where: str) -> list[str]:
    shapes = [child for child in geometry if child.tag in SHAPE_ATTRIBUTES]
    if len(shapes) != 1:
        return [f"{where}: <geometry> holds {len(shapes)} shapes, the specification wants one"]
    return _missing(shapes[0], SHAPE_ATTRIBUTES[shapes[0].tag], where)


def _link_problems(link) -> list[str]:
    where = f"link {link.get('name')}"
    problems = _missing(link, ("name",), where)
    for inertial in link.findall("inertial"):
        mass = inertial.find("mass")
        inertia = inertial.find("inertia")
        if mass is None or inertia is None:
            problems.append(f"{where}: <inertial> needs both <mass> and <inertia>")
        problems += [] if mass is None else _missing(mass, ("value",), where)
        problems += [] if inertia is None else _missing(inertia, INERTIA_ATTRIBUTES, where)
    for kind in ("visual", "collision"):
        for shape in link.findall(kind):
            geometry = shape.find("geometry")
            if geometry is None:
                problems.append(f"{where}: <{kind}> has no <geometry>")
            else:
                problems += _geometry_problems(geometry, f"{where} {kind}")
    return problems


def _joint_problems(joint) -> list[str]:
    where = f"joint {joint.get('name')}"
    problems = _missing(joint, ("name", "type"), where)
    kind = joint.get("type")
    if kind is not None and kind not in JOINT_TYPES:
        problems.append(f"{where}: type {kind!r} is not one of {', '.join(JOINT_TYPES)}")
    for end in ("parent", "child"):
        node = joint.find(end)
        if node is None:
            problems.append(f"{where}: no <{end}>")
        else:
            problems += _missing(node, ("link",), where)
    limit = joint.find("limit")
    if limit is None and kind in ("revolute", "prismatic"):
        problems.append(f"{where}: a {kind} joint needs a <limit>")
    if limit is not None:
        problems += _missing(limit, ("effort", "velocity"), where)
    mimic = joint.find("mimic")
    if mimic is not None:
        problems += _missing(mimic, ("joint",), where)
    return problems


def urdf_spec_problems(robot) -> list[str]:
    """Every violation of the specification's required elements and attributes in the parsed
    `<robot>` element `robot` (lxml or ElementTree), one sentence each."""
    if robot.tag != "robot":
        return [f"the root element is <{robot.tag}>, not <robot>"]
    problems = _missing(robot, ("name",), "robot")
    for link in robot.findall("link"):
        problems += _link_problems(link)
    for joint in robot.findall("joint"):
        problems += _joint_problems(joint)
    return problems
