"""Bounds on one object's wall clock and memory, and worker processes that survive an object
killing them (docs/limits.md, "One object").

Inside a process, `object_limits(seconds, memory)` bounds one object: ObjectTimeout after
`seconds` (SIGALRM) and MemoryError once the object added `memory` bytes of address space
(RLIMIT_AS). Both act only when the object's code is in Python or returns to it.

`Supervisor` runs batches of objects in spawned worker processes, one item after the other, and
watches every item from outside: when the process dies while an item runs (a segfault, a C
library aborting because an allocation failed, the out-of-memory killer's SIGKILL) or the item
outlives its wall clock by GRACE_SECONDS (stuck in C code, where SIGALRM cannot interrupt it),
that item's result is `on_lost(item, WorkerLost)`, the process is replaced and the batch goes on
with the next item. The build (`pipeline.build.WorkerPool`) and `arena validate` use it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import multiprocessing
import os
import queue
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait

from normalize.errors import WriteFailed

try:
    import resource
except ImportError:  # not on Windows: no memory limit there
    resource = None

#: Wall clock one object may take in a worker process before it is refused (limits.time).
OBJECT_SECONDS = 600.0
OBJECT_SECONDS_ENV = "ARENA_OBJECT_SECONDS"
#: Address space (bytes) one object may add to a worker process before it is refused
#: (limits.memory): far above what real objects need (a few hundred MB at most)
OBJECT_MEMORY = 2 * 1024**3
OBJECT_MEMORY_ENV = "ARENA_OBJECT_MEMORY_MB"
#: How long past its wall clock an object may run before its worker process is killed from
#: outside (the object is stuck in C code, which SIGALRM does not interrupt)
GRACE_SECONDS = 10.0


def _limit_from_environment(name: str, default: float, unit: float = 1.0) -> float | None:
    """$name times `unit` (0: unlimited, None), else `default`."""
    value = os.environ.get(name)
    if value is None:
        return default
    return float(value) * unit if float(value) > 0 else None


def default_object_seconds() -> float | None:
    """$ARENA_OBJECT_SECONDS (0: unlimited), else OBJECT_SECONDS."""
    return _limit_from_environment(OBJECT_SECONDS_ENV, OBJECT_SECONDS)


def default_object_memory() -> int | None:
    """$ARENA_OBJECT_MEMORY_MB in MiB (0: unlimited), else OBJECT_MEMORY."""
    limit = _limit_from_environment(OBJECT_MEMORY_ENV, OBJECT_MEMORY, 1024**2)
    return None if limit is None else int(limit)


def hard_seconds(seconds: float | None) -> float | None:
    """The wall clock after which a supervisor kills the process of an object that has
    `seconds` (None: never)."""
    return None if seconds is None else seconds + GRACE_SECONDS


# --------------------------------------------------------------------------- inside a process
def _address_space() -> int | None:
    """The process's virtual memory size in bytes (Linux), None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def memory_limit(extra: int | None):
    """Let the block add at most `extra` bytes of address space to this process
    (RLIMIT_AS): an allocation past it fails, as MemoryError in Python. Active only on the
    main thread of a process (the limit is the whole process's), and where /proc tells the
    current size."""
    current = _address_space() if extra is not None else None
    usable = resource is not None and threading.current_thread() is threading.main_thread()
    if current is None or not usable:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


#: how MuJoCo reports an allocation that failed (a ValueError, not a MemoryError)
MUJOCO_OUT_OF_MEMORY = "Could not allocate memory"


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is, or was raised while handling, a MemoryError (a stage that turns
    every exception into its own code, such as a mesh loader's mesh.corrupt) or MuJoCo's
    report of an allocation that failed."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError) or MUJOCO_OUT_OF_MEMORY in str(exc):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class ObjectTimeout(BaseException):
    """An object ran out of its wall clock. A BaseException, so that no stage's `except
    Exception` can swallow it."""


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise ObjectTimeout in the block after `seconds` (SIGALRM). Active only on the main
    thread of a process, as in worker processes; elsewhere the block runs unlimited."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not usable:
        yield
        return

    def expire(signum, frame):
        raise ObjectTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def object_limits(seconds: float | None, memory: int | None):
    """Both bounds on the block: see `time_limit` and `memory_limit`. An exception the block
    raises because memory ran out (`out_of_memory`: a stage may have turned the MemoryError
    into its own code) comes out as a MemoryError."""
    with time_limit(seconds), memory_limit(memory):
        try:
            yield
        except Exception as exc:
            if out_of_memory(exc) and not isinstance(exc, MemoryError):
                raise MemoryError(str(exc)) from exc
            raise


# --------------------------------------------------------------------------- supervised workers
class WorkerLost(Exception):
    """The worker process running an item died (kind "crash") or was killed because the item
    outlived its wall clock (kind "time")."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


class WorkerError(RuntimeError):
    """A batch function raised in the worker process (a bug: the traceback is the message)."""


class SupervisorClosed(RuntimeError):
    """The supervisor was closed (the build is ending) while a batch still ran."""


def exit_with_parent(parent_pid: int, interval: float = 1.0) -> None:
    """End this process when the process that started it is gone (killed, even by SIGKILL),
    instead of waiting forever for work as an orphan."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


#: Mesa's software renderer (llvmpipe) draws in the worker's own thread: the workers already
#: take one core each, and a rasterizer thread that cannot start under the memory limit left
#: the drawing thread waiting for it for ever (in `mjr_readPixels`)
RENDER_THREADS = ("LP_NUM_THREADS", "0")


def _serve(conn, parent_pid: int, prepare: Sequence[str], trace) -> None:
    """A worker process: import the modules `prepare` (an entry `module:function` also calls
    that function, e.g. to start a child process before the imports after it), then run batches
    sent over `conn`, one result message per item. Ctrl-C in a terminal reaches every process of
    its group: the build that started the worker decides what an interrupt means and stops it,
    so the worker itself ignores SIGINT. A fatal signal writes the crashed thread's Python stack
    to the pipe `trace` (`faulthandler`), where the supervisor reads where the process died."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a few kB at most: within the pipe's buffer, so a crashing process never waits on it
    faulthandler.enable(trace.fileno(), all_threads=False)
    os.environ.setdefault(*RENDER_THREADS)
    exit_with_parent(parent_pid)
    for entry in prepare:
        module, _, function = entry.partition(":")
        with contextlib.suppress(Exception):  # fails again, and is reported, where a batch needs it
            imported = importlib.import_module(module)
            if function:
                getattr(imported, function)()
    while True:
        try:
            fn, items, args = conn.recv()  # imports fn's module: not on the items' clock
        except EOFError:  # the supervisor is gone
            return
        conn.send(("started",))
        try:
            results = fn(items, *args)
            for index in range(len(items)):
                conn.send(("done", index, next(results)))
            conn.send(("end",))
        except WriteFailed as exc:  # the build stops: raised again in the supervisor
            conn.send(("write_failed", exc))
        except Exception:
            conn.send(("error", traceback.format_exc()))


def _death(exitcode: int | None, trace: str = "") -> str:
    if exitcode is None:
        return "the worker process ended"
    if exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else "?"
        text = f"the worker process was killed by signal {-exitcode} ({name})"
        if -exitcode == signal.SIGKILL:
            text += ", as the out-of-memory killer does"
        where = crash_site(trace)
        return f"{text} in {where}" if where else text
    return f"the worker process exited with code {exitcode}"


_PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)', re.M)
#: how many of the innermost Python frames of the crashed thread a crash message names
CRASH_FRAMES = 3


def _short_path(path: str) -> str:
    """A frame's file without the machine's folders: relative to the project, else to the
    deepest folder of `sys.path` holding it (site-packages, the standard library), else its
    name."""
    folders = [_PROJECT] + sorted((p for p in sys.path if os.path.isabs(p)), key=len, reverse=True)
    for folder in folders:
        if path.startswith(folder.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, folder)
    return os.path.basename(path)


def _written(pipe) -> str:
    """What a dead worker wrote to its trace pipe (without waiting for more)."""
    descriptor, chunks = pipe.fileno(), []
    os.set_blocking(descriptor, False)
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(descriptor, 65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def crash_site(trace: str) -> str:
    """The innermost Python frames of the thread that crashed, from `faulthandler`'s text
    ("Stack (most recent call first):" and a line per frame), innermost first: "" when it has
    none."""
    _, _, current = trace.partition("(most recent call first):")
    frames = [
        f"{_short_path(m['path'])}:{m['line']} ({m['name']})"
        for m in _FRAME.finditer(current.split("\n\n")[0])
    ]
    return " < ".join(frames[:CRASH_FRAMES])


class _Slot:
    """One worker process (started on first use, replaced after a loss), its pipe and the pipe
    of its crash trace."""

    def __init__(self, context):
        self.context = context
        self.process = None
        self.conn = None
        self.trace = None  # the pipe where the process writes its stack if it crashes

    def start(self, prepare: Sequence[str] = ()) -> None:
        parent, child = self.context.Pipe()
        trace, trace_end = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_serve, args=(child, os.getpid(), tuple(prepare), trace_end), daemon=True
        )
        try:
            process.start()
        except BaseException:  # the slot stays empty: closing the pool must not join it
            parent.close()
            trace.close()
            raise
        finally:
            child.close()
            trace_end.close()
        self.process, self.conn, self.trace = process, parent, trace

    def receive(self, timeout: float | None):
        """The next message, or WorkerLost (the process is gone or killed) as the value."""
        ready = wait([self.conn, self.process.sentinel], timeout)
        if self.conn in ready:
            try:
                return self.conn.recv()
            except (EOFError, OSError):
                pass
        if not ready:
            self.stop()
            return WorkerLost("time", f"killed after {timeout:g} s")
        self.process.join()
        lost = WorkerLost("crash", _death(self.process.exitcode, _written(self.trace)))
        self.stop()
        return lost

    def stop(self) -> None:
        """End the process (if any) at once."""
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join()
            self.conn.close()
            self.trace.close()
        self.process = self.conn = self.trace = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


class Supervisor:
    """`size` spawned worker processes (started on first use) that run batches, each batch in
    one process, item after item; thread-safe (a caller waits for a free process).

    `run(fn, items, args, seconds, on_lost, on_result)`: `fn(items, *args)` is a module-level
    generator function yielding one result per item, in order, run in the worker process. Each
    item has `seconds` of wall clock (None: unlimited) counted from outside; an item whose
    process dies or outlives its clock gets `on_lost(item, lost)` (called here) as its result,
    and the other items go on in a new process. `on_result(result)`, if given, is called here
    as each item's result arrives (a progress display)."""

    def __init__(self, size: int):
        context = multiprocessing.get_context("spawn")
        self.size = size
        self._slots = [_Slot(context) for _ in range(size)]
        self._free: queue.Queue[_Slot] = queue.Queue()
        for slot in self._slots:
            self._free.put(slot)
        self._closed = False
        self.lost = 0  # items lost so far (their processes replaced)

    def idle(self) -> bool:
        return self._free.qsize() == self.size

    def start(self, count: int, prepare: Sequence[str] = ()) -> None:
        """Before any `run`: start `count` worker processes now instead of on first use, each
        importing the modules `prepare` (what its batches will import; `module:function` calls
        the function too) while the caller goes on with its own work."""
        for slot in self._slots[:count]:
            if slot.process is None:
                slot.start(prepare)

    def pids(self) -> list[int]:
        """The worker processes running now."""
        return [slot.pid for slot in self._slots if slot.pid is not None]

    def run(
        self,
        fn: Callable[..., Iterator],
        items: Sequence,
        args: tuple,
        seconds: float | None,
        on_lost: Callable[[object, WorkerLost], object],
        on_result: Callable[[object], None] | None = None,
    ) -> list:
        slot = self._take()
        try:
            results: list = []
            while len(results) < len(items):
                if self._closed:
                    raise SupervisorClosed("the worker processes were stopped")
                if slot.process is None:
                    slot.start()
                slot.conn.send((fn, list(items[len(results) :]), args))
                self._collect(slot, items, results, seconds, on_lost, on_result or _ignore)
            return results
        finally:
            self._free.put(slot)

    def _take(self) -> _Slot:
        while not self._closed:
            try:
                return self._free.get(timeout=0.2)
            except queue.Empty:
                pass
        raise SupervisorClosed("the worker processes were stopped")

    def _collect(self, slot: _Slot, items, results: list, seconds, on_lost, on_result) -> None:
        """Receive the results of the batch sent to `slot` until it ends or loses an item.
        The items' clock starts once the worker has the batch (its process started and the
        batch function imported)."""
        started = False
        while True:
            message = slot.receive(seconds if started else None)
            if isinstance(message, WorkerLost):
                if self._closed:
                    raise SupervisorClosed("the worker processes were stopped")
                self.lost += 1
                results.append(on_lost(items[len(results)], message))
                on_result(results[-1])
                return
            if message[0] == "started":
                started = True
            elif message[0] == "done":
                results.append(message[2])
                on_result(results[-1])
            elif message[0] == "end":
                return
            elif message[0] == "write_failed":
                raise message[1]
            else:
                raise WorkerError(message[1])

    def close(self) -> None:
        """Stop every worker process (a batch still running ends with SupervisorClosed)."""
        self._closed = True
        for slot in self._slots:
            process = slot.process
            if process is not None:
                with contextlib.suppress(Exception):
                    process.kill()
        while True:  # the idle ones are cleaned up here, the busy ones by their callers
            try:
                self._free.get_nowait().stop()
            except queue.Empty:
                return


def _ignore(result) -> None:
    pass


_KEPT: dict[tuple, Supervisor] = {}  # see `shared`
_KEPT_LOCK = threading.Lock()
#: variables that change without changing what a worker process computes
_UNRELATED_ENVIRONMENT = ("PYTEST_CURRENT_TEST",)


def shared(size: int) -> Supervisor:
    """The worker processes of this process's earlier builds or validations, kept for the
    next one (starting a worker and importing the stages costs seconds: a test suite or a
    notebook runs many builds) when the count, the environment and the working folder are the
    same as when they started; else a new Supervisor, kept in turn (an idle one it replaces is
    closed). The processes end with this process."""
    environment = tuple(
        sorted((k, v) for k, v in os.environ.items() if k not in _UNRELATED_ENVIRONMENT)
    )
    key = (size, environment, os.getcwd())
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
        if kept is None or kept._closed:
            for other_key, other in list(_KEPT.items()):
                if other.idle():
                    other.close()
                    del _KEPT[other_key]
            kept = _KEPT[key] = Supervisor(size)
        return kept
