"""Which headless OpenGL backend renders previews, and the one GL context of a process.

MuJoCo renders offscreen through EGL (Debian's `libegl1`) or OSMesa (`libosmesa6`). `backend()`
decides once per process tree: `MUJOCO_GL=egl` or `osmesa` picks one, `MUJOCO_GL=disable` (or
`off`, `0`...) turns previews off, anything else tries EGL and then OSMesa. Each candidate is
tried in a child process (rendering one frame), so a broken driver can never take the build
down, and the parent never holds a GL context that forked workers would inherit. The answer is
passed to worker processes in `ARENA_PREVIEW_BACKEND` so that they do not probe again. Each
thread renders with its own context (a GL context is current in one thread at a time).

The GL context is created from `mujoco.egl` / `mujoco.osmesa` directly rather than through
`mujoco.Renderer`, whose backend is fixed by MUJOCO_GL when `mujoco` is first imported: another
stage (the MJCF adapter, the simulator checks) may import it before this module decides.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from functools import cache

GL_BACKENDS = ("egl", "osmesa")
DEBIAN_PACKAGES = {"egl": "libegl1", "osmesa": "libosmesa6"}
ENV = "ARENA_PREVIEW_BACKEND"  # "egl", "osmesa" or "none:<reason>", set by the first probe
_OFF = ("disable", "disabled", "off", "false", "0")
PROBE_TIMEOUT = 120.0
# Renders one frame of a one-box model with the backend named by argv[1].
_PROBE = (
    "import sys, mujoco\n"
    "from previews.render import offscreen_frames\n"
    'm = mujoco.MjModel.from_xml_string(\'<mujoco><worldbody><geom size="1"/></worldbody>'
    "</mujoco>')\n"
    "offscreen_frames(sys.argv[1], m, [mujoco.MjData(m)], mujoco.MjvCamera(), 8)\n"
)


@dataclass(frozen=True)
class Backend:
    """name: "egl" or "osmesa", or None when previews are skipped; detail: what renders, or
    why nothing does (shown in the card)."""

    name: str | None
    detail: str

    @property
    def available(self) -> bool:
        return self.name is not None

    def identity(self) -> str:
        """What a cached preview depends on besides the object's files."""
        return f"{self.name}: {self.detail}" if self.name else "none"


def _mujoco_version() -> str | None:
    if importlib.util.find_spec("mujoco") is None:
        return None
    from importlib.metadata import version

    return version("mujoco")


def _probe(name: str) -> str | None:
    """None when `name` renders a frame in a child process, else the reason it does not."""
    env = {**os.environ, "MUJOCO_GL": name, "PYOPENGL_PLATFORM": name}
    try:
        run = subprocess.run(
            [sys.executable, "-c", _PROBE, name],
            env=env,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if run.returncode == 0:
        return None
    lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
    return lines[-1][:300] if lines else f"exit code {run.returncode}"


@cache
def backend() -> Backend:
    """The backend of this process tree (probed once, see the module docstring)."""
    known = os.environ.get(ENV, "")
    mujoco_version = _mujoco_version()
    if mujoco_version is None:
        return Backend(None, "MuJoCo (the `mjcf` extra) is not installed")
    if known in GL_BACKENDS:
        return Backend(known, f"MuJoCo {mujoco_version} through {known}")
    if known.startswith("none:"):
        return Backend(None, known[len("none:") :])
    wanted = os.environ.get("MUJOCO_GL", "").strip().lower()
    if wanted in _OFF:
        found = Backend(None, f"MUJOCO_GL={wanted} turns rendering off")
    else:
        problems = []
        for name in (wanted,) if wanted in GL_BACKENDS else GL_BACKENDS:
            problem = _probe(name)
            if problem is None:
                found = Backend(name, f"MuJoCo {mujoco_version} through {name}")
                break
            problems.append(f"{name}: {problem}")
        else:
            packages = " or ".join(DEBIAN_PACKAGES.values())
            found = Backend(
                None,
                f"no headless OpenGL ({'; '.join(problems)}); install Debian's {packages}",
            )
    os.environ[ENV] = found.name or f"none:{found.detail}"
    return found


_CONTEXTS = threading.local()  # a GL context is current in one thread at a time: one each
_CREATED: list = []  # every context of this process, freed at exit (before PyOpenGL is gone)


@atexit.register
def _free_contexts() -> None:
    while _CREATED:
        context = _CREATED.pop()
        with contextlib.suppress(Exception):  # the process is ending: nothing left to protect
            context.free()


def gl_context(name: str, size: int):
    """This thread's GL context of backend `name`, made current (created on first use)."""
    key = (os.getpid(), name)
    if getattr(_CONTEXTS, "key", None) != key:
        os.environ.setdefault("PYOPENGL_PLATFORM", name)
        if name == "egl":
            from mujoco.egl import GLContext
        elif name == "osmesa":
            from mujoco.osmesa import GLContext
        else:
            raise ValueError(f"unknown GL backend {name!r}")
        _CONTEXTS.context, _CONTEXTS.key = GLContext(size, size), key
        _CREATED.append(_CONTEXTS.context)
    _CONTEXTS.context.make_current()
    return _CONTEXTS.context
