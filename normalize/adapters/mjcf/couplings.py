"""Equality constraints between joints (directly or through fixed tendons) as mimic couplings;
welds and connects refused as closed loops."""

from __future__ import annotations

from dataclasses import replace

from normalize.adapters.mjcf.build import _Build
from normalize.adapters.mjcf.compile import _mj
from normalize.changes import Change
from normalize.errors import ClosedLoopError
from normalize.model import Joint, Mimic


def _couplings(model, joint_names, kept: dict[str, Joint], build: _Build) -> None:
    """Equality constraints between joints (directly, or through fixed tendons held at their
    reference length) become mimic couplings; other equalities are refused or recorded."""
    mj = _mj()
    for e in range(model.neq):
        name = model.equality(e).name or f"equality{e}"
        etype = int(model.eq_type[e])
        if not model.eq_active0[e]:
            build.changes.append(
                Change("mjcf.equality_ignored", f"equality {name} is inactive; ignored", name)
            )
            continue
        if etype in (mj.mjtEq.mjEQ_CONNECT, mj.mjtEq.mjEQ_WELD):
            raise ClosedLoopError(
                f"equality {name} ({mj.mjtEq(etype).name.removeprefix('mjEQ_').lower()}) ties two "
                "bodies together: a closed kinematic loop",
                element=f"equality {name}",
            )
        coupling = None
        poly = [float(v) for v in model.eq_data[e][:5]]
        if etype == mj.mjtEq.mjEQ_JOINT and model.eq_obj2id[e] >= 0 and not any(poly[2:]):
            # y - y0 = a0 + a1 (x - x0), in our coordinates (measured from qpos0) y = a1 x + a0.
            follower = joint_names[model.eq_obj1id[e]]
            coupling = (follower, joint_names[model.eq_obj2id[e]], poly[1], poly[0])
        elif etype == mj.mjtEq.mjEQ_TENDON and model.eq_obj2id[e] < 0:
            coupling = _tendon_coupling(model, int(model.eq_obj1id[e]), poly[0], joint_names)
        why = _add_mimic(coupling, kept) if coupling else "it is not a linear two-joint coupling"
        if why:
            build.changes.append(
                Change("mjcf.equality_ignored", f"equality {name} not represented: {why}", name)
            )


def _tendon_coupling(model, tendon: int, a0: float, joint_names):
    """A fixed tendon c1 q1 + c2 q2 held at its reference length + a0, as
    (follower q2, driver q1, -c1/c2, a0/c2); None for other tendons."""
    mj = _mj()
    start, count = int(model.tendon_adr[tendon]), int(model.tendon_num[tendon])
    wraps = range(start, start + count)
    if count != 2 or any(int(model.wrap_type[w]) != mj.mjtWrap.mjWRAP_JOINT for w in wraps):
        return None
    (j1, c1), (j2, c2) = ((int(model.wrap_objid[w]), float(model.wrap_prm[w])) for w in wraps)
    if c2 == 0.0:
        return None
    return joint_names[j2], joint_names[j1], -c1 / c2, a0 / c2


def _add_mimic(coupling, kept: dict[str, Joint]) -> str | None:
    """Make `follower` mimic `driver` (resolved to the driver's own driver); the reason when
    it cannot be represented."""
    follower, driver, multiplier, offset = coupling
    if follower not in kept or driver not in kept:
        return "a coupled joint is not a one-DOF joint of the object"
    if kept[follower].mimic is not None:
        return f"joint {follower} is already coupled to {kept[follower].mimic.joint}"
    target = kept[driver]
    if target.mimic is not None:
        multiplier, offset = (
            multiplier * target.mimic.multiplier,
            multiplier * target.mimic.offset + offset,
        )
        driver = target.mimic.joint
    if driver == follower:
        return "the coupling is circular"
    kept[follower] = replace(kept[follower], mimic=Mimic(driver, multiplier, offset))
    for name, joint in kept.items():
        if joint.mimic is not None and joint.mimic.joint == follower:
            m, b = joint.mimic.multiplier, joint.mimic.offset
            kept[name] = replace(joint, mimic=Mimic(driver, m * multiplier, m * offset + b))
    return None
