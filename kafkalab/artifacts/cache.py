"""The artifact cache (`~/.cache/kafkalab/artifacts`, `KAFKALAB_CACHE` moves its parent) and
its lock: whoever builds an artifact holds `<cache>/.locks/<name>.lock`, so a second
kafkalab waits for it and then finds it built. Every artifact (Kafka, Spark, ksqlDB, the
base image, the box) is built under it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root

Progress = Callable[[str], None]


def cache_dir() -> Path:
    """Where artifacts live (`~/.cache/kafkalab/artifacts`, `KAFKALAB_CACHE` moves it)."""
    return cache_root() / "artifacts"


@contextlib.contextmanager
def cache_lock(
    target: Path, what: str, progress: Progress | None = None, shared: bool = False
) -> Iterator[None]:
    """Hold `<dir>/.locks/<name>.lock` next to `target`: exclusive while it is built,
    shared while it is checked. Whoever has to wait says so (on stderr without `progress`)
    and waits; a builder keeps its pid in the file meanwhile, for that message."""
    path = target.parent / ".locks" / f"{target.name}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = path.open("a+")
    except OSError as exc:
        if not shared:
            raise KafkalabError(f"cannot lock {path} to build {what}: {exc}") from None
        lock = None  # a read-only cache (a trainer's copy) is only read: nothing to guard
    if lock is None:
        yield
        return
    with lock:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(lock, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            pid = lock.read().strip()  # the builder's; none while others only check
            doing = f"(pid {pid}) is building" if pid else "is checking"
            say = progress or (lambda msg: print(msg, file=sys.stderr))
            say(f"another kafkalab {doing} {what}; waiting for it")
            fcntl.flock(lock, mode)
        if not shared:
            _write_pid(lock, f"{os.getpid()}\n")
        try:
            yield
        finally:
            if not shared:
                _write_pid(lock, "")
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_pid(lock: IO[str], text: str) -> None:
    lock.truncate(0)
    lock.write(text)
    lock.flush()
