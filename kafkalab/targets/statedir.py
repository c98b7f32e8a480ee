"""A cluster's state directory: whose it is, who works on it now, and lab.json (the saved
cluster: its topology and network namespace).

- The marker `<state>/.kafkalab-lab` says kafkalab made the directory, so `down --purge`
  may delete it. A directory kafkalab wrote before the marker existed (it holds a
  lab.json with a "topology" and a "netns") counts as a cluster's too: the next command that
  changes it marks it.
- One command at a time per cluster: `exclusive(state)` holds an flock on
  `<state>/.kafkalab-lock` (re-entrant within a process, refused at once across
  processes, naming the holder). `locked(path)` is the same lock for any file, e.g. an
  artifact in the cache while it is built.
- lab.json is replaced atomically; a damaged one is one error line with the way out.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from kafkalab.errors import KafkalabError
from kafkalab.paths import state_dir
from kafkalab.targets import netns

MARKER = ".kafkalab-lab"
LOCK = ".kafkalab-lock"
# Set by a command that holds a lab's lock for the kafkalab command it runs as a child (a
# lab step: `lab solve` runs `kafkalab up`): the child works under its parent's lock.
LOCK_HOLDER = "KAFKALAB_LOCK_HOLDER"
MARKER_TEXT = (
    "kafkalab lab state: kafkalab made this directory; `kafkalab down --purge` deletes it.\n"
)
P = ParamSpec("P")
R = TypeVar("R")


class StateDamaged(KafkalabError):
    """lab.json cannot be read; `down --purge` still works (it needs none of it)."""


class Busy(KafkalabError):
    """Another process holds the lock."""


# -- lab.json -------------------------------------------------------------------------------


def damaged(path: Path, why: str) -> StateDamaged:
    return StateDamaged(
        f"{path} is damaged ({why}): run `kafkalab down --purge` (it deletes this lab's "
        "machines and data), then `kafkalab up` for a new lab"
    )


def read_saved(path: Path) -> dict[str, Any]:
    """The saved cluster ({} when there is none); StateDamaged when it is not what
    kafkalab writes: an object with a topology, a valid netns name and owns_netns."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise damaged(path, _reason(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise damaged(path, f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise damaged(path, "not a JSON object")
    if not isinstance(data.get("topology"), dict):
        raise damaged(path, "no topology")
    name = data.get("netns")
    if not isinstance(name, str) or not netns.valid_name(name):
        raise damaged(path, f"netns {name!r} is not a namespace name kafkalab makes")
    if not isinstance(data.get("owns_netns", False), bool):
        raise damaged(path, "owns_netns is not true or false")
    return data


def write_json(path: Path, data: Any) -> None:
    """Write `path` whole or not at all: a temp file in the same dir, then os.replace."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(data, indent=2) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # the rename itself on disk, where supported
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# -- whose directory it is ----------------------------------------------------------------------


def mark(state: Path) -> None:
    """Say that kafkalab made `state` (idempotent)."""
    marker = state / MARKER
    if not marker.is_file():
        marker.write_text(MARKER_TEXT)


def is_legacy(state: Path) -> bool:
    """A cluster saved by a kafkalab from before the marker: its lab.json is kafkalab's own."""
    try:
        return bool(read_saved(state / "lab.json"))
    except StateDamaged:
        return False


def check_ours(state: Path) -> None:
    """Refuse a state directory kafkalab did not make: it holds something, but neither the
    marker nor a lab.json of kafkalab's. An absent or empty one is fine (a new cluster)."""
    if not state.exists():
        return
    if not state.is_dir():
        raise KafkalabError(
            f"KAFKALAB_STATE={state} is not a directory: point it at a new or empty directory"
        )
    if (state / MARKER).is_file():
        return
    content = sorted(p.name for p in state.iterdir() if p.name != LOCK)
    if not content or is_legacy(state):
        return
    shown = ", ".join(content[:5]) + (", ..." if len(content) > 5 else "")
    raise KafkalabError(
        f"{state} is not a kafkalab lab (no {MARKER} marker; it holds {shown}), so kafkalab "
        "will neither use nor delete it: point KAFKALAB_STATE at a new or empty directory "
        f"(if it is a lab whose marker was lost, `touch {state / MARKER}` first)"
    )


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below `path` (rmtree must not cross into one)."""
    root = path.resolve()
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            # field 5 is the mount point, with space, tab, newline and \ octal-escaped
            point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4]))
            if point == root or root in point.parents:
                found.append(point)
    return found


# -- one command at a time ---------------------------------------------------------------------

_guard = threading.Lock()
_held: dict[str, list[int]] = {}  # lock path -> [fd, depth] held by this process


def describe_command() -> str:
    """This process's command line as the user typed it (for a Busy message)."""
    argv = sys.argv
    if argv and ("kafkalab" in Path(argv[0]).name or argv[0].endswith("kafkalab/__main__.py")):
        return shlex.join(["kafkalab", *argv[1:]])
    return shlex.join(argv) or "python"


def holder(path: Path) -> str:
    """Who holds (or last held) the lock at `path`, as written by `locked`."""
    try:
        info = json.loads(path.read_text())
        since = time.strftime("%H:%M:%S", time.localtime(info["since"]))
        return f"`{info['command']}` (pid {info['pid']}, since {since})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another kafkalab command"


@contextlib.contextmanager
def locked(
    path: Path,
    what: str | None = None,
    *,
    wait: float = 0.0,
    remove_dirs_up_to: Path | None = None,
) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (made with its parent dirs) for the body.

    While another process holds it: Busy (naming the holder's command and pid) at once,
    or after waiting up to `wait` seconds for it (math.inf: as long as it takes).
    Re-entrant within this process: a nested `locked(path)`, from any thread, just runs
    its body. The file is removed on release; then, with `remove_dirs_up_to`, its parent
    dirs up to that one, as far as they are empty. `what` names the locked thing in
    the message ("the Kafka 3.9.2 archive in the cache").
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    key = str(path.parent.resolve() / path.name)
    with _guard:
        nested = key in _held
        if nested:
            _held[key][1] += 1
    if not nested:
        fd = _acquire(path, what or str(path), wait)  # may wait: not under _guard
        with _guard:
            _held[key] = [fd, 1]
    try:
        yield
    finally:
        with _guard:
            _held[key][1] -= 1
            if _held[key][1] == 0:
                _release(_held.pop(key)[0], path, remove_dirs_up_to)


def _acquire(path: Path, what: str, wait: float) -> int:
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # its dir went with a releasing holder's cleanup
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() < deadline:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
                continue
            raise Busy(
                f"{what} is busy: {holder(path)} is running on it; wait until it ends, "
                "then run this again"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # A holder removes the file on release: if ours was removed meanwhile, another
        # process may lock a new file at the path; start again with that one.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            info = {"pid": os.getpid(), "command": describe_command(), "since": time.time()}
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps(info) + "\n").encode())
            return fd
        os.close(fd)


def _release(fd: int, path: Path, remove_dirs_up_to: Path | None) -> None:
    try:
        with contextlib.suppress(FileNotFoundError):  # while still held: see _acquire
            if os.stat(path).st_ino == os.fstat(fd).st_ino:  # not a new holder's file
                path.unlink()
        if remove_dirs_up_to is not None:
            top = remove_dirs_up_to.resolve()
            here = path.parent.resolve()
            while True:
                try:
                    here.rmdir()
                except OSError:
                    break
                if here == top or top not in here.parents:
                    break
                here = here.parent
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive(state: Path) -> Iterator[None]:
    """The cluster at `state`, for one command: refuse a directory kafkalab did not make,
    hold its lock (another command on the cluster is refused at once), mark a new one. What
    a refused or failed command on a new cluster made (the directory, the marker) is removed."""
    check_ours(state)
    if held_by_parent(state):
        yield
        return
    missing = state
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    created = missing if not state.exists() else None
    with locked(state / LOCK, f"the lab at {state}", remove_dirs_up_to=created):
        check_ours(state)  # again, now that no other command can change it
        marked = not (state / MARKER).exists()
        if marked:
            mark(state)
        try:
            yield
        finally:
            if marked and state.is_dir():
                rest = {p.name for p in state.iterdir()} - {LOCK, MARKER}
                if not rest:
                    (state / MARKER).unlink(missing_ok=True)


def held_by_parent(state: Path) -> bool:
    """Whether this process's parent holds the lock of the lab at `state` and lent it to
    this process (LOCK_HOLDER names the parent): the lock file names the parent's pid, and
    the lock is taken (a new flock on it is refused)."""
    said = os.environ.get(LOCK_HOLDER, "")
    parent = os.getppid()
    if not said.isdigit() or int(said) != parent:
        return False
    try:
        info = json.loads((state / LOCK).read_text())
        fd = os.open(state / LOCK, os.O_RDONLY)
    except (OSError, ValueError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return isinstance(info, dict) and info.get("pid") == parent
    finally:
        os.close(fd)  # a lock taken here (nobody held it) goes with the descriptor
    return False


def one_command(fn: Callable[P, R]) -> Callable[P, R]:
    """A CLI command that changes the cluster: it runs under `exclusive(state_dir())`. One
    given an inventory (`-i`, KAFKALAB_INVENTORY) changes that cluster, not the embedded
    one: it leaves the embedded state dir alone."""

    @wraps(fn)
    def command(*args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs.get("inventory") is not None or os.environ.get("KAFKALAB_INVENTORY"):
            return fn(*args, **kwargs)
        with exclusive(state_dir()):
            return fn(*args, **kwargs)

    return command
