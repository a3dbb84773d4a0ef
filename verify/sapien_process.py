"""SAPIEN (the `sapien` package, 3.x), the simulator checks' fourth loader, in a child process.

    sapien = shared()                        # one child per process
    sapien.start()                           # optional: start it early (else on first use)
    loaded = sapien.load(path)               # Loaded: links, joints, what it printed...
    poses = sapien.poses({joint: value})     # {link: 4x4 pose in the base frame}

A child process because SAPIEN is C++ that may crash on a file it cannot take (stepping an
articulation of 256 links does: verify.checks.simulator.SAPIEN_MAX_LINKS), and because
importing it runs a shell (`nvidia-smi`) and sets environment variables for its Vulkan library:
a crash or a hang (past TIMEOUT) ends only the child, raised here as SapienFailed, and the next
request starts a new one. The child leaves the object's memory limit (RLIMIT_AS) of the worker
that started it: it serves every later object too.

Render device: SAPIEN's default scene and URDF loader need one (Vulkan); without it (no GPU, no
Vulkan driver: CI and the developers' machines) they raise "failed to find a rendering device"
at the first visual. The child then loads physics only: a PhysX scene without a render system,
every `<visual>` dropped before SAPIEN reads it, so collision geometry only (`physics_only`).
What SAPIEN prints on import and on that probe ("Failed to find system libvulkan. Fallback to
SAPIEN builtin libvulkan.", the probe's error) is about the machine, not a file, and is dropped;
what it prints while loading and stepping a file is returned (`Loaded.printed`).

The base is fixed (`fix_root_link`); an object of one link is a kinematic body (SAPIEN makes a
lone link an actor, not an articulation). Joints are set by name (`set_qpos` in SAPIEN's own
order). SAPIEN skips a collision shape it cannot cook without a word: those are counted
(`Loaded.dropped`). After loading, the object is stepped STEPS times from rest.

`python -m verify.sapien_process` is the child: one JSON request per line on stdin, one JSON
answer per line on its original stdout.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

STEPS = 10
TIMEOUT = 120.0  # s for one request (the corpus's slowest load: 0.5 s)


class SapienFailed(RuntimeError):
    """The child process died, hung, or failed a request."""


@dataclass
class Loaded:
    """One file in SAPIEN. error: why it did not load (None when it did); links and joints:
    the names SAPIEN has (moving joints only); dropped: link -> collision shapes SAPIEN could
    not cook and skipped; unstable: the first link whose pose is not finite after STEPS steps."""

    error: str | None
    printed: str
    physics_only: bool
    links: list[str] = field(default_factory=list)
    joints: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    unstable: str | None = None


class SapienProcess:
    """The parent's end of one child process."""

    def __init__(self):
        self.process: subprocess.Popen | None = None
        self.physics_only = False
        self._greeted = False  # the child's first answer (its render device) read

    def load(self, path: Path) -> Loaded:
        answer = self._request({"load": str(path)})
        return Loaded(physics_only=self.physics_only, **answer)

    def poses(self, coords: dict[str, float]) -> dict[str, np.ndarray]:
        """Link frames in the base frame with the loaded object's joints at `coords`."""
        answer = self._request({"poses": coords})
        out = {}
        for name, rows in answer.items():
            pose = np.eye(4)
            pose[:3, :] = np.reshape(rows, (3, 4))
            out[name] = pose
        return out

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def start(self) -> None:
        """Start the child without waiting for it: its import of SAPIEN (1 to 2 s) runs while
        this process goes on, and it starts outside any object's memory limit."""
        if self.process is not None:
            return
        project = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": project + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "verify.sapien_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._greeted = False

    def _request(self, message: dict) -> dict:
        try:
            self.start()
            if not self._greeted:
                self.physics_only = self._answer()["physics_only"]
                self._greeted = True
            try:
                self.process.stdin.write((json.dumps(message) + "\n").encode())
                self.process.stdin.flush()
            except BrokenPipeError:  # the child is gone
                raise SapienFailed(_died(self.process.wait(TIMEOUT))) from None
            return self._answer()
        except BaseException:  # a half-done request leaves the child out of step
            self.close()
            raise

    def _answer(self) -> dict:
        stdout = self.process.stdout
        ready, _, _ = select.select([stdout], [], [], TIMEOUT)
        if not ready:
            raise SapienFailed(f"its process answered nothing in {TIMEOUT:g} s and was killed")
        line = stdout.readline()
        if not line:
            raise SapienFailed(_died(self.process.wait()))
        answer = json.loads(line)
        if "failed" in answer:
            raise SapienFailed(answer["failed"])
        return answer


def _died(code: int) -> str:
    if code < 0:
        return f"its process died ({signal.Signals(-code).name})"
    return f"its process exited (code {code})"


_SHARED: dict[str, SapienProcess] = {}


def shared() -> SapienProcess:
    """This process's child, closed when this process exits."""
    if "process" not in _SHARED:
        _SHARED["process"] = SapienProcess()
        atexit.register(_SHARED["process"].close)
    return _SHARED["process"]


def start_early() -> None:
    """Start this process's child now when SAPIEN is installed: a worker calls it before its
    first object, so that SAPIEN's import overlaps that object's normalization."""
    if importlib.util.find_spec("sapien") is not None:
        shared().start()


# --------------------------------------------------------------------------- the child process
class _Child:
    def __init__(self):
        import sapien
        from sapien.wrapper.urdf_loader import URDFLoader

        class PhysicsOnlyLoader(URDFLoader):
            def _build_link(self, link, link_builder):
                link.visuals = []
                super()._build_link(link, link_builder)

        self.sapien = sapien
        try:
            sapien.render.RenderSystem()
            self.physics_only, self.loader_class = False, URDFLoader
        except RuntimeError:  # "failed to find a rendering device"
            self.physics_only, self.loader_class = True, PhysicsOnlyLoader
        self.scene = self.articulation = None
        self.links: dict = {}
        self.root = ""

    def load(self, path: str) -> dict:
        import warnings

        from verify.printed import printed_output

        self.scene = self.articulation = None
        try:
            with printed_output() as printed, warnings.catch_warnings(record=True) as raised:
                warnings.simplefilter("always")
                warnings.filterwarnings("ignore", category=DeprecationWarning)
                answer = {"error": None, **self._load(path)}
        except Exception as exc:  # SAPIEN refusing the file is the finding
            answer = {"error": f"{type(exc).__name__}: {str(exc).strip()}"}
        printed.extend(str(w.message) for w in raised)
        return {**answer, "printed": "\n".join(printed)}

    def _load(self, path: str) -> dict:
        sapien = self.sapien
        if self.physics_only:
            scene = sapien.Scene([sapien.physx.PhysxCpuSystem()])
        else:
            scene = sapien.Scene()
        loader = self.loader_class()
        loader.set_scene(scene)
        articulations, actors, _ = loader.parse(path)
        if len(articulations) + len(actors) != 1:
            raise ValueError(
                f"SAPIEN reads {len(articulations)} articulations and {len(actors)} separate "
                "bodies, not one object"
            )
        if articulations:
            self.articulation = articulations[0].build(fix_root_link=True)
            self.links = {link.name: link for link in self.articulation.links}
            self.root = self.articulation.root.name
            joints = [joint.name for joint in self.articulation.active_joints]
        else:
            [actor] = actors
            entity = actor.build_kinematic(actor.name)
            body = entity.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)
            self.links = {actor.name: body}
            self.root = actor.name
            joints = []
        self.scene = scene  # keeps the object alive between requests
        dropped = {}
        for name, component in self.links.items():
            missing = len(loader.name2link[name].collisions) - len(component.collision_shapes)
            if missing:
                dropped[name] = missing
        for _ in range(STEPS):
            scene.step()
        unstable = next((n for n in self.links if not np.isfinite(self._pose(n)).all()), None)
        links = list(self.links)
        return {"links": links, "joints": joints, "dropped": dropped, "unstable": unstable}

    def _pose(self, name: str) -> np.ndarray:
        return self.links[name].entity_pose.to_transformation_matrix()

    def poses(self, coords: dict[str, float]) -> dict:
        if self.articulation is not None:
            joints = self.articulation.active_joints
            self.articulation.set_qpos(np.array([coords.get(j.name, 0.0) for j in joints]))
        root = np.linalg.inv(self._pose(self.root))
        return {n: (root @ self._pose(n))[:3, :].ravel().tolist() for n in self.links}


def _serve() -> None:
    from verify.printed import printed_output

    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints must not reach the answers
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)  # the worker's object limit is not ours
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash is reported, not dumped
    except ImportError:  # not on Windows
        pass
    with printed_output():  # the import's and the render probe's messages: about the machine
        child = _Child()
    answers.write(json.dumps({"physics_only": child.physics_only}) + "\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "load" in request:
                answer = child.load(request["load"])
            else:
                answer = child.poses(request["poses"])
        except Exception as exc:
            answer = {"failed": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    _serve()
