"""What every artifact goes through: its checksum checked (or recorded when kafkalab built
it), fetched from a mirror, packed as a tarball, unpacked on the controller.

A mirror is https or a local directory: the checksum comes from the same mirror, so plain
http (anyone on the way could change both) is refused. What kafkalab builds into the
cache gets a `.sha512` written with it and is checked against it on every resolve, as an
official tarball is.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from kafkalab.artifacts.cache import cache_lock
from kafkalab.errors import KafkalabError

_CHUNK = 1 << 20
# "<hex>  file" or "<hex> *file" (sha512sum), "SHA512 (file) = <hex>" (BSD)
_SUM_LINE = re.compile(r"^\s*([0-9a-fA-F]{128})(?:\s|$)")
_BSD_LINE = re.compile(r"=\s*([0-9a-fA-F]{128})\s*$")


# --- checksums ---------------------------------------------------------------------------


def parse_sha512(text: str) -> str:
    """The lower-case hex digest in a `.sha512` file.

    Accepts Apache's `gpg --print-md SHA512` style (`file: 0A1B 2C3D ...`, wrapped over
    lines), `sha512sum` output (`<hex>  file`) and the BSD style (`SHA512 (file) = <hex>`).
    """
    match = _SUM_LINE.match(text) or _BSD_LINE.search(text.strip())
    if match:
        return match.group(1).lower()
    digest = re.sub(r"\s+", "", text.rsplit(":", 1)[-1])
    if re.fullmatch(r"[0-9a-fA-F]{128}", digest):
        return digest.lower()
    raise KafkalabError(
        "not a SHA-512 checksum file: expected 128 hex digits, as in Apache's"
        " 'kafka_2.13-X.tgz: 0A1B ...' or sha512sum's '<hex>  kafka_2.13-X.tgz'"
    )


def file_digest(path: Path, algorithm: str) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


def verify_digest(
    archive: Path,
    checksum: Path,
    algorithm: str,
    parse: Callable[[str], str],
    where: str,
) -> None:
    """Check `archive` against the digest `parse` reads from `checksum`; errors say what to do.

    `where` tells where the checksum file comes from (it is fetched with the archive)."""
    if not checksum.exists():
        raise KafkalabError(
            f"{archive} has no checksum file: put {checksum.name} ({where}) at {checksum}"
        )
    try:
        expected = parse(checksum.read_text())
    except KafkalabError as exc:
        raise KafkalabError(f"{checksum}: {exc}") from None
    actual = file_digest(archive, algorithm)
    if actual != expected:
        label = algorithm.upper().replace("SHA", "SHA-")
        raise KafkalabError(
            f"{archive} does not match {checksum.name} ({label} {actual[:16]}..., expected"
            f" {expected[:16]}...): the download is incomplete or corrupt. Delete it and"
            f" fetch the {_kind(archive)} and its {checksum.suffix} again."
        )


def _kind(archive: Path) -> str:
    return "tarball" if archive.name.endswith(".tgz") else "archive"


def verify_sha512(tgz: Path, checksum: Path | None = None) -> None:
    """Check `tgz` against its `.sha512` (default: the file next to it)."""
    checksum = checksum or tgz.with_name(tgz.name + ".sha512")
    where = "from the same place as the tarball, e.g. https://archive.apache.org/dist/kafka/"
    verify_digest(tgz, checksum, "sha512", parse_sha512, where)


def recorded(tgz: Path) -> Path:
    """Where the SHA-512 of a tarball kafkalab built is recorded (sha512sum's format)."""
    return tgz.with_name(tgz.name + ".sha512")


def record_and_replace(partial: Path, target: Path) -> None:
    """Record the SHA-512 of a tarball just built, then move it into place: a tarball in
    the cache always has its record (the record is written first)."""
    digest = file_digest(partial, "sha512")
    note = partial.with_name(partial.name + ".sha512")
    note.write_text(f"{digest}  {target.name}\n")
    os.replace(note, recorded(target))
    os.replace(partial, target)


def verify_recorded(tgz: Path, fetch: str) -> None:
    """Check a tarball kafkalab built against the SHA-512 recorded when it was built."""
    expected = parse_sha512(recorded(tgz).read_text())
    actual = file_digest(tgz, "sha512")
    if actual != expected:
        raise KafkalabError(
            f"{tgz} no longer matches the SHA-512 recorded when kafkalab built it"
            f" ({actual[:16]}..., recorded {expected[:16]}...): it was changed or damaged"
            f" since. Delete it and {recorded(tgz).name}, then run `{fetch}` to build it again."
        )


# --- mirror ------------------------------------------------------------------------------


def mirror_url(env: str) -> str | None:
    """The mirror `env` names, or None when unset: https, or a local directory (a path or
    file://). Plain http is refused: the checksum comes from the same mirror, so whoever can
    change the tarball on the way can change its checksum too."""
    value = os.environ.get(env, "").strip()
    if not value:
        return None
    scheme = urllib.parse.urlsplit(value).scheme.lower()
    if scheme in ("https", "file"):
        return value
    if not scheme:
        local = Path(value).expanduser().resolve()
        if local.is_dir():
            return local.as_uri()
        raise KafkalabError(f"{env}={value}: no such directory; give an https:// URL or a path")
    raise KafkalabError(
        f"{env}={value}: a mirror must be https:// (or a local directory), not {scheme}://,"
        " whose downloads anyone on the way can change"
    )


def download_file(url: str, dest: Path, hint: str = "") -> None:
    """`url` (from a checked mirror) into `dest`; a redirect away from https is refused."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            final = response.geturl()
            if url.startswith("https:") and not final.startswith("https:"):
                raise KafkalabError(f"{url} redirects to {final}, which is not https. {hint}")
            with dest.open("wb") as out:
                shutil.copyfileobj(response, out, _CHUNK)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise KafkalabError(f"could not download {url}: {reason}. {hint}".rstrip()) from None


# --- packing and unpacking ----------------------------------------------------------------


def write_tarball(dist: Path, dest: Path, compresslevel: int = 6) -> None:
    """Tar `dist` as its own top dir, owned by root; bin/ and sbin/ scripts executable.
    (Jars are compressed already: a low level costs little size and much less time.)"""

    def normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        executable = info.isdir() or Path(info.name).parent.name in ("bin", "sbin")
        info.mode = 0o755 if executable else 0o644
        return info

    with tarfile.open(dest, "w:gz", compresslevel=compresslevel) as tar:
        tar.add(dist, arcname=dist.name, filter=normalise)


def unpacked(tgz: Path) -> Path:
    """The top dir inside `tgz` (e.g. the Kafka home), unpacked once next to it, for tools on
    the controller side."""
    dest = tgz.parent / "unpacked" / tgz.name.removesuffix(".tgz")
    done = dest / ".complete"
    if not done.exists():
        with cache_lock(dest, f"the unpacked {tgz.name}"):
            if not done.exists():
                if dest.exists():
                    shutil.rmtree(dest)
                dest.mkdir(parents=True)
                with tarfile.open(tgz) as tar:
                    tar.extractall(dest, filter="data")
                done.touch()
    homes = [p for p in dest.iterdir() if p.is_dir()]
    return homes[0]
