"""Load shipped files as a user would, in a fresh process per loader, and capture everything the
loader prints (C-level stdout and stderr included, Python warnings and log records too).

    results = load_in_subprocess("pybullet", [path, ...])   # [LoadResult(path, loaded, output)]

Loaders: `yourdfpy` (URDF, meshes loaded, `validate()` finding nothing (`yourdfpy_problems`)
and the URDF specification's required elements and attributes present: `verify.urdf_spec`),
`mujoco` (`MjModel.from_xml_path`, for URDF and MJCF alike) and `pybullet` (`loadURDF` in a
DIRECT connection). The child process imports the loader first (PyBullet prints its build time
on import: not a load warning), then
writes a marker before and after each file to one pipe carrying both stdout and stderr; what
appears between the markers is that file's output. Python warnings are shown every time
(`simplefilter("always")`), so a repeated warning is not hidden after the first file;
deprecation warnings stay hidden as Python's defaults hide them from a user (yourdfpy's own use
of a deprecated trimesh call is not about the file).

`python -m verify.loaders LOADER PATH...` is the child; it prints one JSON line per file after
its own markers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

LOADERS = ("yourdfpy", "mujoco", "pybullet")
BEGIN = "\x1eARENA-LOAD-BEGIN\x1e"
END = "\x1eARENA-LOAD-END\x1e"
TIMEOUT = 600


@dataclass(frozen=True)
class LoadResult:
    """path: the file; loaded: the loader returned a model; output: what it printed (stripped),
    or the exception when it did not load."""

    path: str
    loaded: bool
    output: str

    @property
    def clean(self) -> bool:
        return self.loaded and not self.output


def available(loader: str) -> bool:
    """Whether the loader's package is importable here."""
    import importlib.util

    return importlib.util.find_spec(loader) is not None


def load_in_subprocess(loader: str, paths, *, timeout: float = TIMEOUT) -> list[LoadResult]:
    """Load every path with `loader` in one fresh Python process (working directory: a
    temporary folder, so nothing such as MUJOCO_LOG.TXT lands elsewhere)."""
    if loader not in LOADERS:
        raise ValueError(f"unknown loader {loader!r} (choose from {', '.join(LOADERS)})")
    paths = [str(Path(p).resolve()) for p in paths]
    if not paths:
        return []
    project = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": project + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory(prefix="arena-load-") as cwd:
        done = subprocess.run(
            [sys.executable, "-m", "verify.loaders", loader, *paths],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    return _parse(done.stdout.decode("utf-8", "replace"), paths, done.returncode)


def _parse(text: str, paths: list[str], returncode: int) -> list[LoadResult]:
    out = []
    chunks = text.split(BEGIN)[1:]
    for path, chunk in zip(paths, chunks, strict=False):
        printed, _, tail = chunk.partition(END)
        status = json.loads(tail.strip().splitlines()[0]) if tail.strip() else None
        if status is None:  # the process died inside this file
            out.append(LoadResult(path, False, f"{printed.strip()} (exit code {returncode})"))
            break
        output = printed.strip()
        if not status["loaded"]:
            output = "; ".join(x for x in (output, status["error"]) if x)
        out.append(LoadResult(path, status["loaded"], output))
    if len(out) < len(paths):
        out += [
            LoadResult(p, False, f"not reached: the loader process exited with {returncode}")
            for p in paths[len(out) :]
        ]
    return out


#: yourdfpy's validate() wants `effort` and `velocity` on every `<limit>`; the convention omits
#: them when the source gives none (docs/convention.md), so those two complaints are expected.
def yourdfpy_problems(urdf) -> list[str]:
    """Everything yourdfpy's `validate()` finds in a loaded URDF."""
    urdf.validate()
    return [str(e) for e in urdf.errors]


# --------------------------------------------------------------------------- the child process
def _loader(name: str):
    if name == "yourdfpy":
        import yourdfpy
        from lxml import etree

        from verify.urdf_spec import urdf_spec_problems

        def load(path: str) -> None:
            urdf = yourdfpy.URDF.load(path, load_meshes=True, build_collision_scene_graph=True)
            problems = yourdfpy_problems(urdf) + urdf_spec_problems(etree.parse(path).getroot())
            if problems:
                raise ValueError(f"yourdfpy: validate() is False: {'; '.join(problems)}")

        return load
    if name == "mujoco":
        import mujoco

        return lambda path: mujoco.MjModel.from_xml_path(path)
    import pybullet

    client = pybullet.connect(pybullet.DIRECT)

    def load_bullet(path: str) -> None:
        pybullet.resetSimulation(physicsClientId=client)
        body = pybullet.loadURDF(path, physicsClientId=client)
        if body < 0:
            raise ValueError("pybullet: loadURDF returned no body")

    return load_bullet


def _child(name: str, paths: list[str]) -> None:
    import ctypes
    import warnings

    libc = ctypes.CDLL(None)
    warnings.simplefilter("always")
    for category in (DeprecationWarning, PendingDeprecationWarning):  # hidden by default
        warnings.filterwarnings("ignore", category=category)
    load = _loader(name)
    libc.fflush(None)
    for path in paths:
        sys.stdout.write(BEGIN)
        sys.stdout.flush()
        error = None
        try:
            load(path)
        except Exception as exc:  # the loader refused the file: that is the result
            error = f"{type(exc).__name__}: {str(exc).strip()}"
        sys.stdout.flush()
        sys.stderr.flush()
        libc.fflush(None)  # C-level prints (printf) are buffered when stdout is a pipe
        sys.stdout.write(END + json.dumps({"loaded": error is None, "error": error}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2:])
