"""Writing into a machine's root from the host without following the machine's links.

A machine's root is an overlay the machine writes to: any path in it may be a link the
machine made (`ln -sf /etc/shadow ~vagrant/.ssh/authorized_keys`). A plain `open()` from
the host would follow it out of the machine and write, chmod and chown a host file. Here
every path is walked one component at a time from a descriptor of the machine's root,
each directory opened with O_NOFOLLOW, and a file is replaced by renaming a new one over
it (a rename replaces a link itself, never its target). A directory on the way that is a
link is refused: nothing is written.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from kafkalab.errors import KafkalabError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO the machine put there must not hang the host on open.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
MAX_READ = 1 << 20  # the files kafkalab reads back (/etc/hosts) are small
CHUNK = 1 << 20


def _parts(rel: str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p != "/"]
    if not parts or any(p in (".", "..") for p in parts):
        raise ValueError(f"not a plain path below a machine's root: {rel!r}")
    return parts


@contextlib.contextmanager
def _directory(root: Path, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of root/parts..., every component opened without following links."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for i, part in enumerate(parts):
            try:
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):  # the machine was quicker
                        os.mkdir(part, 0o755, dir_fd=fd)
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/" + "/".join(parts[: i + 1])
                    raise KafkalabError(
                        f"{where} in the machine at {root} is a link or not a directory: "
                        "kafkalab writes nothing through it (a machine made it; "
                        "`kafkalab down --purge` starts the machine afresh)"
                    ) from None
                raise
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _regular(root: Path, rel: str) -> Iterator[BinaryIO | None]:
    """root/rel opened for reading when it is a regular file reached without following a
    link; None when it is absent, a link, or something else (a FIFO, a device)."""
    *dirs, name = _parts(rel)
    fd = -1
    try:
        with _directory(root, dirs, create=False) as dfd:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
    except (FileNotFoundError, KafkalabError):
        pass
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
    if fd < 0:
        yield None
        return
    with os.fdopen(fd, "rb") as f:
        yield f if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None  # a read won't block


def read_text(root: Path, rel: str) -> str | None:
    """A regular file's text below `root`, or None when it is absent or is a link."""
    with _regular(root, rel) as f:
        data = f.read(MAX_READ + 1) if f is not None else None
    if data is None or len(data) > MAX_READ:
        return None
    return data.decode(errors="replace")


def copy_out(
    root: Path, rel: str, dest: Path, limit: int, head: bytes = b"", newer_than: float = 0.0
) -> bool | None:
    """Copy root/rel, a regular file reached without following a link, to `dest` on the
    host (a path kafkalab chose; written beside it and renamed, so nobody reads half of
    it). None, and nothing written, when the file is absent, a link, older than
    `newer_than`, larger than `limit` bytes, or does not begin with `head`; False when
    `dest` holds the same bytes already (left as it is); True when copied."""
    with _regular(root, rel) as f:
        if f is None:
            return None
        st = os.fstat(f.fileno())
        if st.st_size > limit or st.st_mtime < newer_than or f.read(len(head)) != head:
            return None
        tmp = dest.with_name(f".{dest.name}.kafkalab-{secrets.token_hex(4)}")
        try:
            with tmp.open("xb") as out:
                out.write(head)
                copied = len(head)
                while (block := f.read(CHUNK)) and copied <= limit:
                    out.write(block)
                    copied += len(block)
            if copied > limit:  # it grew while read
                return None
            if dest.is_file() and filecmp.cmp(tmp, dest, shallow=False):
                return False
            tmp.replace(dest)
        finally:
            tmp.unlink(missing_ok=True)
    return True


def write_text(
    root: Path,
    rel: str,
    text: str,
    mode: int = 0o644,
    owner: tuple[int, int] | None = None,
    dir_owner: tuple[int, int] | None = None,
    dir_mode: int | None = None,
) -> bool:
    """Put `text` at root/rel (a regular file with `mode` and `owner`), replacing whatever
    is there, a link included, without following it. `dir_owner` and `dir_mode` also set
    the file's directory's (through its descriptor). Returns True when the file was written."""
    *dirs, name = _parts(rel)
    data = text.encode()
    with _directory(root, dirs, create=True) as dfd:
        st = os.fstat(dfd)
        if dir_owner is not None and (st.st_uid, st.st_gid) != dir_owner:
            os.fchown(dfd, *dir_owner)
        if dir_mode is not None and stat.S_IMODE(st.st_mode) != dir_mode:
            os.fchmod(dfd, dir_mode)
        if _same(dfd, name, mode, owner, lambda f: f.read(len(data) + 1) == data):
            return False
        _put(dfd, name, mode, owner, lambda f: f.write(data))
    return True


def copy_file(root: Path, rel: str, source: Path, mode: int = 0o644) -> bool:
    """Make root/rel a regular file with the bytes of `source` (compared, and copied, in
    blocks: archives of hundreds of MB), replacing whatever is there as write_text does.
    Returns True when it was written."""
    *dirs, name = _parts(rel)
    with _directory(root, dirs, create=True) as dfd, source.open("rb") as original:
        size = os.fstat(original.fileno()).st_size

        def same_bytes(copy: BinaryIO) -> bool:
            if os.fstat(copy.fileno()).st_size != size:
                return False
            while block := original.read(CHUNK):
                if copy.read(len(block)) != block:
                    return False
            return True

        if _same(dfd, name, mode, None, same_bytes):
            return False
        original.seek(0)
        _put(dfd, name, mode, None, lambda f: shutil.copyfileobj(original, f, CHUNK))
    return True


def _put(
    dfd: int,
    name: str,
    mode: int,
    owner: tuple[int, int] | None,
    write: Callable[[BinaryIO], object],
) -> None:
    """Write a new file beside `name` and rename it over whatever `name` is: a link is
    replaced, not followed; a directory a machine made there is removed (its links
    unfollowed) first."""
    tmp = f".{name}.kafkalab-{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dfd)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            os.fchmod(f.fileno(), mode)
            if owner is not None:
                os.fchown(f.fileno(), *owner)
        try:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except IsADirectoryError:
            shutil.rmtree(name, dir_fd=dfd)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _same(
    dfd: int,
    name: str,
    mode: int,
    owner: tuple[int, int] | None,
    same_content: Callable[[BinaryIO], bool],
) -> bool:
    """Is `name` already a regular file with this mode and owner, and the content
    `same_content` finds in it?"""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
    except OSError:
        return False  # absent, or a link (ELOOP): to be replaced
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # a directory, a FIFO: fdopen refuses a directory
        os.close(fd)
        return False
    with os.fdopen(fd, "rb") as f:
        if st.st_mode & 0o7777 != mode:
            return False
        if owner is not None and (st.st_uid, st.st_gid) != owner:
            return False
        return same_content(f)  # a regular file: a read does not block
