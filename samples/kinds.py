"""Procedural shapes of the domain: each function builds one object kind from boxes and cylinders.

Every builder takes a `Builder`, a `Sampler` (seeded choices) and `demo` (fixed counts for the
curated set) and `helpers` (put accessories such as handles on their own links joined by fixed
joints, as real libraries do). Objects stand on z = 0 with their front facing -y; the rest pose
lies inside every joint's limits.
"""

from __future__ import annotations

import math

import numpy as np

from samples.design import Builder, Design
from samples.frames import rot_x, rot_z, rotation_to


class Sampler:
    """Seeded choices, rounded so that written files and ground truth agree exactly."""

    def __init__(self, rng: np.random.Generator, extra_drawers: int = 0):
        self.rng = rng
        self.extra_drawers = extra_drawers  # a near-miss twin: the same cabinet, more drawers

    def u(self, lo: float, hi: float, digits: int = 3) -> float:
        return round(float(self.rng.uniform(lo, hi)), digits)

    def i(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi], both included."""
        return int(self.rng.integers(lo, hi + 1))

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def p(self, probability: float) -> bool:
        return bool(self.rng.random() < probability)


def _beam(b: Builder, link: str, start, end, width: float, depth: float, name: str) -> None:
    """A box whose long axis runs from `start` to `end` (for tilted legs and blades)."""
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    length = float(np.linalg.norm(end - start))
    b.box(link, (width, depth, length), (start + end) / 2, rotation_to(end - start), name)


def _carcass(b: Builder, link: str, width: float, depth: float, height: float, t: float) -> None:
    """A box open at the front (-y), of panels `t` thick: bottom, top, left, right and back."""
    b.box(link, (width, depth, t), (0, 0, t / 2), name="bottom")
    b.box(link, (width, depth, t), (0, 0, height - t / 2), name="top")
    for side, x in (("left", -1), ("right", 1)):
        b.box(link, (t, depth, height - 2 * t), (x * (width - t) / 2, 0, height / 2), name=side)
    b.box(link, (width - 2 * t, t, height - 2 * t), (0, (depth - t) / 2, height / 2), name="back")


def cabinet(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    width, depth, height, t = s.u(0.6, 1.2), s.u(0.35, 0.6), s.u(0.8, 1.5), 0.018
    n_drawers = 3 if demo else s.i(1, 4)
    n_doors = 2 if demo else s.i(0 if n_drawers > 1 else 1, 2)
    n_drawers += s.extra_drawers
    body = b.link("body", "cabinet_frame")
    _carcass(b, body, width, depth, height, t)
    inner_w, inner_h, front = width - 2 * t, height - 2 * t, -depth / 2
    door_h = round(inner_h * (0.55 if n_drawers else 1.0), 4)
    slot = round((inner_h - (door_h if n_doors else 0.0)) / max(n_drawers, 1), 4)
    for i in range(n_drawers):
        zc = height - t - slot * (i + 0.5)
        drawer = b.link(f"drawer_{i}", "drawer")
        b.box(drawer, (inner_w - 0.004, t, slot - 0.004), (0, front + t / 2, zc), name="front")
        tray_d, tray_h = depth - 0.05, round(slot * 0.6, 4)
        tray_y, tray_z = front + t + tray_d / 2, zc - slot / 2 + 0.01 + tray_h / 2
        b.box(
            drawer, (inner_w - 0.03, tray_d, 0.012), (0, tray_y, tray_z - tray_h / 2), name="tray"
        )
        for x in (-1, 1):
            b.box(
                drawer,
                (0.012, tray_d, tray_h),
                (x * (inner_w - 0.042) / 2, tray_y, tray_z),
                name="side",
            )
        b.joint(
            f"drawer_{i}_slide",
            "prismatic",
            body,
            drawer,
            (0, front, zc),
            "-y",
            0.0,
            round(0.75 * depth, 3),
        )
        grip = (0, front - 0.025, zc)
        handle = b.attach(drawer, f"drawer_{i}_handle", "handle", grip, helpers)
        b.cylinder(handle, 0.006, round(min(0.3, inner_w * 0.4), 3), grip, "x", "handle")
    door_w = inner_w / max(n_doors, 1)
    sides = ["left", "right"] if n_doors == 2 else [s.pick(["left", "right"])] * n_doors
    for j, side in enumerate(sides):
        x0 = -inner_w / 2 + j * door_w
        hinge_x, free_x = (x0, x0 + door_w) if side == "left" else (x0 + door_w, x0)
        zc = t + door_h / 2
        door = b.link(f"door_{j}", "door")
        b.box(
            door,
            (door_w - 0.004, t, door_h - 0.004),
            (x0 + door_w / 2, front + t / 2, zc),
            name="panel",
        )
        axis = "-z" if side == "left" else "z"
        b.joint(
            f"door_{j}_hinge",
            "revolute",
            body,
            door,
            (hinge_x, front, zc),
            axis,
            0.0,
            s.u(1.5, 2.2),
        )
        inward = 1 if side == "left" else -1
        grip = (free_x - inward * 0.04, front - 0.025, zc)
        handle = b.attach(door, f"door_{j}_handle", "handle", grip, helpers)
        b.cylinder(handle, 0.006, round(door_h * 0.3, 3), grip, "z", "handle")


def refrigerator(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    width, depth, height, t = s.u(0.55, 0.9), s.u(0.55, 0.75), s.u(1.4, 1.9), 0.04
    n_doors = 2 if demo else s.i(1, 2)
    side = "right" if demo else s.pick(["left", "right"])
    body = b.link("body", "refrigerator_body")
    _carcass(b, body, width, depth, height, t)
    inner_h, front = height - 2 * t, -depth / 2
    freezer_h = round(inner_h * s.u(0.28, 0.38), 4) if n_doors == 2 else 0.0
    if freezer_h:
        b.box(
            body, (width - 2 * t, depth - t, t), (0, -t / 2, height - t - freezer_h), name="divider"
        )
    spans = [(t, height - t - freezer_h)] + (
        [(height - t - freezer_h, height - t)] if freezer_h else []
    )
    hinge_x = width / 2 if side == "right" else -width / 2
    axis = "z" if side == "right" else "-z"
    # Doors hang 3 mm in front of the carcass, hinged on their back edge: swung past a right
    # angle, a door clears the side panel instead of grazing it along the hinge line.
    gap = 0.003
    for j, (z0, z1) in enumerate(spans):
        zc, h = (z0 + z1) / 2, z1 - z0
        door = b.link(f"door_{j}", "door")
        b.box(door, (width, 0.05, h - 0.006), (0, front - gap - 0.025, zc), name="panel")
        b.joint(
            f"door_{j}_hinge",
            "revolute",
            body,
            door,
            (hinge_x, front - gap, zc),
            axis,
            0.0,
            s.u(1.7, 2.1),
        )
        grip = (-hinge_x * 0.85, front - gap - 0.07, zc)
        handle = b.attach(door, f"door_{j}_handle", "handle", grip, helpers)
        b.cylinder(handle, 0.012, round(min(0.5, h * 0.4), 3), grip, "z", "handle")
    if demo or s.p(0.5):
        drawer = b.link("crisper", "drawer")
        dw, dh, dd = width - 2 * t - 0.02, round(inner_h * 0.12, 4), depth - t - 0.06
        zc = t + 0.01 + dh / 2
        b.box(drawer, (dw, dd, 0.01), (0, front + 0.02 + dd / 2, zc - dh / 2 + 0.005), name="tray")
        b.box(drawer, (dw, 0.012, dh), (0, front + 0.026, zc), name="front")
        b.joint(
            "crisper_slide",
            "prismatic",
            body,
            drawer,
            (0, front + 0.02, zc),
            "-y",
            0.0,
            round(0.6 * depth, 3),
        )


def laptop(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    width, base_d, tb, tl = s.u(0.28, 0.4), s.u(0.2, 0.28), 0.018, 0.008
    tilt = s.u(0.0, 0.35)
    lid_h = round(base_d * 0.95, 4)
    base = b.link("base_body", "laptop_base")
    b.box(base, (width, base_d, tb), (0, 0, tb / 2), name="chassis")
    b.box(
        base, (width * 0.8, base_d * 0.45, 0.002), (0, -base_d * 0.05, tb + 0.001), name="keyboard"
    )
    # The hinge runs along the back edge, above the keyboard and the display's thickness, and
    # the lid stands behind it: closed, the display rests on the keyboard, never inside the base.
    hinge = np.array([0.0, base_d / 2, tb + 0.004])
    tilt_rot = rot_x(-tilt)  # lid leans back (towards +y) by `tilt`
    lid = b.link("lid", "screen_lid")
    b.box(lid, (width, tl, lid_h), hinge + tilt_rot @ [0, tl / 2, lid_h / 2], tilt_rot, "lid")
    b.joint(
        "lid_hinge", "revolute", base, lid, hinge, "x", -s.u(0.3, 0.6), round(math.pi / 2 + tilt, 4)
    )
    screen = b.attach(lid, "screen", "screen", hinge, helpers)
    b.box(
        screen,
        (width * 0.9, 0.002, lid_h * 0.85),
        hinge + tilt_rot @ [0, -0.001, lid_h / 2],
        tilt_rot,
        "display",
    )


def scissors(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    blade, half_open, t = s.u(0.08, 0.12), s.u(0.1, 0.3), 0.003
    pivot = np.array([0.0, 0.0, 0.01])
    for k, (name, sign) in enumerate((("blade_a", 1), ("blade_b", -1))):
        link = b.link(name, "leg")
        rot = rot_z(sign * half_open)
        z = np.array([0.0, 0.0, k * t])
        b.box(link, (blade, 0.012, t), pivot + z + rot @ [blade / 2, 0, 0], rot, "blade")
        b.box(link, (blade * 0.7, 0.01, t), pivot + z + rot @ [-blade * 0.35, 0, 0], rot, "shank")
        b.box(link, (0.04, 0.03, t), pivot + z + rot @ [-blade * 0.7 - 0.02, 0, 0], rot, "ring")
    b.joint(
        "pivot",
        "revolute",
        "blade_a",
        "blade_b",
        pivot,
        "z",
        -s.u(0.2, 0.5),
        round(2 * half_open, 4),
    )


def faucet(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    column_h, reach = s.u(0.15, 0.3), s.u(0.12, 0.22)
    body = b.link("body", "faucet_base")
    b.cylinder(body, s.u(0.03, 0.05), 0.01, (0, 0, 0.005), "z", "plate")
    b.cylinder(body, 0.015, column_h, (0, 0, 0.01 + column_h / 2), "z", "column")
    top = 0.01 + column_h
    swivel = demo or s.p(0.5)
    if swivel:
        spout = b.link("spout", "spout")
        b.joint(
            "spout_swivel", "revolute", body, spout, (0, 0, top), "z", -s.u(0.6, 1.2), s.u(0.6, 1.2)
        )
    else:
        spout = b.attach(body, "spout", "spout", (0, 0, top), helpers)
    b.box(spout, (0.02, reach, 0.02), (0, -reach / 2, top - 0.01), name="arm")
    b.box(spout, (0.02, 0.02, 0.04), (0, -reach + 0.01, top - 0.04), name="outlet")
    knobs = 1 if demo else s.i(1, 2)
    if knobs == 1:
        handle = b.link("handle", "switch")
        hub = (0, 0, top + 0.03)
        b.cylinder(handle, 0.012, 0.02, hub, "z", "hub")
        b.box(handle, (0.01, 0.07, 0.008), (0, 0.035, top + 0.045), name="lever")
        b.joint("handle_turn", "continuous", body, handle, hub, "z")
        return
    for k, x in enumerate((-0.06, 0.06)):
        knob = b.link(f"knob_{k}", "switch")
        b.cylinder(body, 0.008, 0.03, (x, 0, 0.025), "z", f"stem_{k}")
        b.cylinder(knob, 0.018, 0.02, (x, 0, 0.05), "z", "cap")
        b.box(knob, (0.05, 0.008, 0.008), (x, 0, 0.064), name="cross")
        b.joint(f"knob_{k}_turn", "continuous", body, knob, (x, 0, 0.04), "z")


def bottle(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    radius, height = s.u(0.03, 0.05), s.u(0.15, 0.3)
    neck_r, neck_h = round(radius * 0.45, 4), 0.025
    body = b.link("body", "bottle_body")
    b.cylinder(body, radius, height, (0, 0, height / 2), "z", "shell")
    b.cylinder(body, neck_r, neck_h, (0, 0, height + neck_h / 2), "z", "neck")
    cap = b.link("cap", "lid")
    b.cylinder(
        cap,
        round(neck_r * 1.25, 4),
        round(neck_h * 0.9, 4),
        (0, 0, height + neck_h * 0.55),
        "z",
        "cap",
    )
    per_turn = s.pick([0.0025, 0.003, 0.004])  # thread lead, metres per revolution
    if not demo and s.p(0.1):
        per_turn = -per_turn  # a left-handed thread
    turns = 2.0 if demo else s.pick([1.5, 2.0, 3.0])
    travel = round(2 * math.pi * turns, 6)
    # Unscrewing (the cap rising) is a positive turn for a right-handed thread.
    lower, upper = (0.0, travel) if per_turn > 0 else (-travel, 0.0)
    b.joint(
        "cap_screw",
        "helical",
        body,
        cap,
        (0, 0, height),
        "z",
        lower,
        upper,
        per_turn / (2 * math.pi),
    )


def cart(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    length, width, basket_h, r = s.u(0.6, 1.0), s.u(0.4, 0.6), s.u(0.25, 0.45), s.u(0.05, 0.09)
    casters = demo or s.p(0.5)
    floor = round(2 * r + (0.08 if casters else 0.03), 4)
    body = b.link("body", "cart_body")
    b.box(body, (length, width, 0.02), (0, 0, floor), name="floor")
    for name, (x, y, sx, sy) in {
        "front": (length / 2, 0, 0.01, width),
        "rear": (-length / 2, 0, 0.01, width),
        "left": (0, width / 2, length, 0.01),
        "right": (0, -width / 2, length, 0.01),
    }.items():
        b.box(body, (sx, sy, basket_h), (x, y, floor + basket_h / 2), name=name)
    bar_x, bar_z = -length / 2 - 0.06, floor + basket_h + 0.2
    push = b.attach(body, "push_handle", "handle", (bar_x, 0, bar_z), helpers)
    b.cylinder(push, 0.012, width, (bar_x, 0, bar_z), "y", "bar")
    for y in (-1, 1):
        _beam(
            b,
            push,
            (-length / 2, y * (width / 2 - 0.02), floor + basket_h),
            (bar_x, y * (width / 2 - 0.02), bar_z),
            0.02,
            0.02,
            "upright",
        )
    for side, y in (("left", 1), ("right", -1)):
        wy = y * (width / 2 - 0.04)
        wheel = b.link(f"rear_wheel_{side}", "wheel")
        b.cylinder(wheel, r, 0.03, (-length / 2 + 0.1, wy, r), "y", "tyre")
        b.joint(
            f"rear_wheel_{side}_spin", "continuous", body, wheel, (-length / 2 + 0.1, wy, r), "y"
        )
        x = length / 2 - 0.1
        if not casters:
            wheel = b.link(f"front_wheel_{side}", "wheel")
            b.cylinder(wheel, r, 0.03, (x, wy, r), "y", "tyre")
            b.joint(f"front_wheel_{side}_spin", "continuous", body, wheel, (x, wy, r), "y")
            continue
        caster = b.link(f"caster_{side}", "caster")
        b.box(caster, (0.05, 0.05, 0.06), (x - 0.02, wy, 2 * r + 0.03), name="fork")
        b.joint(f"caster_{side}_swivel", "continuous", body, caster, (x, wy, floor - 0.01), "z")
        wheel = b.link(f"caster_wheel_{side}", "wheel")
        b.cylinder(wheel, r, 0.03, (x - 0.04, wy, r), "y", "tyre")
        b.joint(f"caster_wheel_{side}_spin", "continuous", caster, wheel, (x - 0.04, wy, r), "y")


def folding_chair(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    seat_w, seat_d, seat_h, back_h = (
        s.u(0.38, 0.48),
        s.u(0.36, 0.44),
        s.u(0.42, 0.48),
        s.u(0.35, 0.45),
    )
    frame = b.link("frame", "chair_frame")
    for x in (-1, 1):
        xs = x * (seat_w / 2 + 0.015)
        _beam(
            b,
            frame,
            (xs, -seat_d / 2 - 0.05, 0),
            (xs, seat_d / 2, seat_h + back_h),
            0.025,
            0.02,
            "front_leg",
        )
    back_rot = rotation_to((0, seat_d / 2 + 0.05, seat_h + back_h))
    b.box(
        frame,
        (seat_w, 0.015, 0.12),
        (0, seat_d / 2 - 0.01, seat_h + back_h - 0.08),
        back_rot,
        "backrest",
    )
    # The rear legs hinge on the front legs: the pivot lies on the front legs' line.
    pivot_z = round(seat_h * 0.6, 4)
    pivot_y = -seat_d / 2 - 0.05 + pivot_z / (seat_h + back_h) * (seat_d + 0.05)
    pivot = np.array([0.0, round(pivot_y, 4), pivot_z])
    rear = b.link("rear_legs", "chair_leg")
    for x in (-1, 1):
        xs = x * (seat_w / 2 - 0.01)
        _beam(b, rear, pivot + [xs, 0, 0], (xs, seat_d / 2 + 0.2, 0), 0.025, 0.02, "rear_leg")
    b.box(rear, (seat_w - 0.04, 0.02, 0.02), (0, seat_d / 2 + 0.15, 0.08), name="crossbar")
    b.joint("rear_legs_fold", "revolute", "frame", rear, pivot, "x", -s.u(0.3, 0.5), 0.0)
    seat = b.link("seat", "seat")
    b.box(seat, (seat_w, seat_d, 0.02), (0, 0, seat_h), name="seat")
    b.joint(
        "seat_fold", "revolute", "frame", seat, (0, seat_d / 2, seat_h), "x", -s.u(1.3, 1.5), 0.0
    )


def window(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    width, height, t = s.u(0.8, 1.6), s.u(0.9, 1.5), 0.05
    n = 2 if demo else s.i(2, 3)
    # Each sash runs in its own track, 4 cm apart: a sash 2 cm deep and its lock (1 cm, on its
    # front face) leave 1 cm of clearance to the sash in front, which slides past the lock.
    depth = round(0.04 * n + 0.02, 3)
    vertical = False if demo else s.p(0.4)
    frame = b.link("frame", "window_frame")
    b.box(frame, (width, depth, t), (0, 0, t / 2), name="sill")
    b.box(frame, (width, depth, t), (0, 0, height - t / 2), name="head")
    for name, x in (("left", -1), ("right", 1)):
        b.box(frame, (t, depth, height - 2 * t), (x * (width - t) / 2, 0, height / 2), name=name)
    inner_w, inner_h = width - 2 * t, height - 2 * t
    span = inner_h if vertical else inner_w
    size = round(span / n + 0.02, 4)
    travel = round((span - size) * 0.95, 3)
    for k in range(n):
        sash = b.link(f"sash_{k}", "window")
        offset = -span / 2 + size / 2 + k * (span - size) / max(n - 1, 1)
        y = -depth / 2 + 0.02 + k * 0.04
        if vertical:
            centre, dims, axis = (0, y, height / 2 + offset), (inner_w, 0.02, size), "z"
        else:
            centre, dims, axis = (offset, y, height / 2), (size, 0.02, inner_h), "x"
        b.box(sash, dims, centre, name="sash")
        # The first sash slides towards +axis, the last towards -axis, middle ones both ways.
        if k == 0:
            lower, upper = 0.0, travel
        elif k == n - 1:
            lower, upper = -travel, 0.0
        else:
            lower, upper = -round(travel / 2, 3), round(travel / 2, 3)
        b.joint(f"sash_{k}_slide", "prismatic", frame, sash, centre, axis, lower, upper)
        grip = np.array(centre) + [0, -0.015, 0]
        lock = b.attach(sash, f"sash_{k}_lock", "handle", grip, helpers)
        b.box(lock, (0.03, 0.01, 0.06), grip, name="lock")


def keyboard(b: Builder, s: Sampler, demo: bool, helpers: bool) -> None:
    rows = 4 if demo else s.i(3, 6)
    cols = 10 if demo else s.i(max(10, math.ceil(30 / rows)), 16)
    pitch, key, travel = 0.019, 0.016, s.u(0.003, 0.005, 4)
    width, depth = cols * pitch + 0.03, (rows + 1) * pitch + 0.03
    base = b.link("base_body", "keyboard_base")
    b.box(base, (round(width, 4), round(depth, 4), 0.02), (0, 0, 0.01), name="case")
    top = 0.02 + 0.002

    def add_key(name: str, x: float, y: float, size_x: float) -> None:
        link = b.link(name, "key")
        b.box(link, (size_x, key, 0.008), (x, y, top + 0.004), name="cap")
        b.joint(f"{name}_press", "prismatic", base, link, (x, y, top), "-z", 0.0, travel)

    for r in range(rows):
        for c in range(cols):
            x, y = (c - (cols - 1) / 2) * pitch, ((rows - 1) / 2 - r) * pitch + pitch / 2
            add_key(f"key_r{r}_c{c}", round(x, 4), round(y, 4), key)
    add_key("space", 0.0, round(-(rows / 2) * pitch, 4), round(6 * pitch - 0.003, 4))


# kind -> (builder, taxonomy category, PartNet model_cat)
KINDS = {
    "cabinet": (cabinet, "storage_furniture", "StorageFurniture"),
    "refrigerator": (refrigerator, "refrigerator", "Refrigerator"),
    "laptop": (laptop, "laptop", "Laptop"),
    "scissors": (scissors, "scissors", "Scissors"),
    "faucet": (faucet, "faucet", "Faucet"),
    "bottle": (bottle, "bottle", "Bottle"),
    "cart": (cart, "cart", "Cart"),
    "folding_chair": (folding_chair, "folding_chair", "FoldingChair"),
    "window": (window, "window", "Window"),
    "keyboard": (keyboard, "keyboard", "Keyboard"),
}


def build_design(kind: str, name: str, sampler: Sampler, demo: bool, helpers: bool) -> Design:
    """The design of one object of `kind`, named `name`."""
    make, category, model_cat = KINDS[kind]
    builder = Builder(name, kind, category, model_cat)
    make(builder, sampler, demo, helpers)
    return builder.build()
