"""The Kafka distribution tarball: official from the cache or a mirror, else built from Maven.

`resolve_kafka` returns a `.tgz` in the official Apache layout (one top dir
`kafka_<scala>-<version>/` with `bin/`, `libs/`, `config/`). Order: the official tarball
already in the cache (checked against its `.sha512`), else a download from
`KAFKALAB_KAFKA_MIRROR` (https or a local directory; checked), else one assembled from Maven
Central jars (strict checksums) with our own launchers (`kafka_<scala>-<version>-maven.tgz`).

What kafkalab builds into the cache gets a `.sha512` written with it and is checked against
it on every resolve, as an official tarball is. Building holds a lock on that artifact
(`<cache>/.locks/`): a second kafkalab waits for it and then finds it built. The lock and
the mirror check live here because every artifact module (Spark, ksqlDB, the image, the
box) uses them; that is why this module is over 400 lines.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import IO

from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root

DEFAULT_SCALA = "2.13"
MIRROR_ENV = "KAFKALAB_KAFKA_MIRROR"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
MVN_TIMEOUT = 1800  # seconds; the first assembly downloads ~60 MB of jars

Progress = Callable[[str], None]

_DATA = Path(__file__).parent / "data"
_CHUNK = 1 << 20
# "<hex>  file" or "<hex> *file" (sha512sum), "SHA512 (file) = <hex>" (BSD)
_SUM_LINE = re.compile(r"^\s*([0-9a-fA-F]{128})(?:\s|$)")
_BSD_LINE = re.compile(r"=\s*([0-9a-fA-F]{128})\s*$")
# the main class a launcher hands to kafka-run-class.sh, after any $VARS (official or ours)
_RUN_CLASS_CALL = re.compile(
    r"kafka-run-class\.sh\"?(?:\s+\"?\$\{?\w+\}?\"?)*\s+([A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)+)"
)


def cache_dir() -> Path:
    """Where Kafka tarballs live (`~/.cache/kafkalab/artifacts`, `KAFKALAB_CACHE` moves it)."""
    return cache_root() / "artifacts"


def official_name(version: str, scala: str = DEFAULT_SCALA) -> str:
    return f"kafka_{scala}-{version}.tgz"


def assembled_name(version: str, scala: str = DEFAULT_SCALA) -> str:
    return f"kafka_{scala}-{version}-maven.tgz"


def cached_kafka(cache: Path | None = None) -> list[Path]:
    """The Kafka tarballs already in the cache, official and assembled."""
    return sorted((cache or cache_dir()).glob("kafka_*.tgz"))


def resolve_kafka(
    version: str,
    scala: str = DEFAULT_SCALA,
    cache: Path | None = None,
    progress: Progress | None = None,
) -> Path:
    """Return a Kafka `.tgz` for this version, fetching or assembling it on first use."""
    cache = cache or cache_dir()
    say = progress or (lambda _msg: None)
    official = cache / official_name(version, scala)
    assembled = cache / assembled_name(version, scala)
    what = f"Kafka {version}"
    with cache_lock(official, what, progress, shared=True):
        found = _cached_kafka(official, assembled)
    if found is not None:
        return found
    with cache_lock(official, what, progress):
        found = _cached_kafka(official, assembled)  # built while this one waited
        if found is not None:
            return found
        mirror = mirror_url(MIRROR_ENV)
        if mirror:
            return download_from_mirror(mirror, version, scala, cache, say)
        if assembled.exists():
            say(f"{assembled.name} has no recorded SHA-512 (older kafkalab): building it again")
        return assemble_from_maven(version, scala, cache, say)


def _cached_kafka(official: Path, assembled: Path) -> Path | None:
    """The checked tarball in the cache, or None when it must be fetched or built."""
    if official.exists():
        verify_sha512(official)
        return official
    if os.environ.get(MIRROR_ENV) or not assembled.exists():
        return None
    if not recorded(assembled).exists():
        return None
    verify_recorded(assembled, "kafkalab fetch")
    return assembled


def unpacked(tgz: Path) -> Path:
    """The Kafka home inside `tgz`, unpacked once next to it (for controller-side tools)."""
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


# --- the cache lock ----------------------------------------------------------------------


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


def download_from_mirror(mirror: str, version: str, scala: str, cache: Path, say: Progress) -> Path:
    """Fetch the official tarball and its `.sha512` from a mirror, verify, keep in cache."""
    name = official_name(version, scala)
    url = f"{mirror.rstrip('/')}/{version}/{name}"
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / name
    say(f"downloading {url}")
    hint = f"Check {MIRROR_ENV}, or unset it to assemble Kafka from Maven Central."
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as tmp:
        tgz, checksum = Path(tmp) / name, Path(tmp) / (name + ".sha512")
        download(url + ".sha512", checksum, hint)
        download(url, tgz, hint)
        verify_sha512(tgz, checksum)
        os.replace(checksum, target.with_name(checksum.name))
        os.replace(tgz, target)
    return target


def download(url: str, dest: Path, hint: str = "") -> None:
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


# --- assembly from Maven Central ---------------------------------------------------------


@dataclass(frozen=True)
class Launcher:
    """One `bin/` script of the assembled distribution (a row of `tools.toml`)."""

    name: str
    kind: str = "tool"  # tool | server | stop | static
    classes: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    optional: bool = False
    daemon_name: str = ""
    usage: str = ""


def launcher_table() -> list[Launcher]:
    """The tool -> main class table, `kafkalab/data/launchers/tools.toml`."""
    table = tomllib.loads((_DATA / "launchers" / "tools.toml").read_text())["launcher"]
    return [
        Launcher(
            name=name,
            kind=row.get("kind", "tool"),
            classes=tuple(row.get("classes", ())),
            args=tuple(row.get("args", ())),
            optional=row.get("optional", False),
            daemon_name=row.get("daemon_name", ""),
            usage=row.get("usage", ""),
        )
        for name, row in table.items()
    ]


def render_launchers(version: str, classes: set[str]) -> dict[str, str]:
    """The `bin/` scripts for a distribution whose jars hold `classes` (dotted names)."""
    templates = _DATA / "launchers"
    scripts: dict[str, str] = {}
    missing: list[str] = []
    for launcher in launcher_table():
        if launcher.kind == "static":
            scripts[launcher.name] = (templates / launcher.name).read_text()
            continue
        main_class = next((c for c in launcher.classes if c in classes), None)
        if main_class is None:
            if not launcher.optional:
                missing.append(f"{launcher.name} ({' or '.join(launcher.classes)})")
            continue
        template = Template((templates / f"{launcher.kind}.sh.in").read_text())
        scripts[launcher.name] = template.substitute(
            tool=launcher.name,
            version=version,
            main_class=main_class,
            args="".join(f" {arg}" for arg in launcher.args),
            daemon_name=launcher.daemon_name,
            usage=launcher.usage,
            pattern=re.escape(main_class),
            what="Kafka server" if main_class == "kafka.Kafka" else "ZooKeeper server",
        )
    if missing:
        raise KafkalabError(
            f"the Maven jars of Kafka {version} lack the main class of: {', '.join(missing)}."
            " Add the class to kafkalab/data/launchers/tools.toml, or use the official tarball."
        )
    return scripts


def assemble_from_maven(version: str, scala: str, cache: Path, say: Progress) -> Path:
    """Build `kafka_<scala>-<version>-maven.tgz` from Maven Central jars and our launchers."""
    target = cache / assembled_name(version, scala)
    top = f"kafka_{scala}-{version}"
    cache.mkdir(parents=True, exist_ok=True)
    say(f"assembling Kafka {version} from Maven Central (first time: ~1 min)")
    with tempfile.TemporaryDirectory(prefix=".assemble-", dir=cache) as tmp:
        work = Path(tmp)
        pom = work / "pom.xml"
        pom.write_text(
            Template((_DATA / "maven" / "pom.xml.in").read_text()).substitute(
                version=version, scala=scala
            )
        )
        dist = work / top
        libs = dist / "libs"
        _copy_dependencies(pom, libs, cache, version, scala)
        bin_dir = dist / "bin"
        bin_dir.mkdir()
        for name, text in render_launchers(version, _classes_in(libs.glob("*.jar"))).items():
            (bin_dir / name).write_text(text)
        shutil.copytree(_DATA / "maven" / "config", dist / "config")
        partial = work / target.name
        _write_tarball(dist, partial)
        record_and_replace(partial, target)
    say(f"wrote {target} ({target.stat().st_size / 1e6:.0f} MB)")
    return target


class MavenError(KafkalabError):
    """mvn ran and failed; `output` is what it printed."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def mvn_copy_dependencies(
    pom: Path, out: Path, cache: Path, what: str, hint: str, settings: Path | None = None
) -> None:
    """`mvn dependency:copy-dependencies` of `pom` into `out`, with the cache's own local
    repository: offline first when it has one, so a pre-filled cache needs no network.
    Strict checksums: a download that does not match its repository checksum fails. One
    mvn at a time uses the local repository (the lock), which Maven does not guard.

    `what` names the thing fetched in errors, `hint` says what to do instead."""
    m2 = cache / "m2"
    with cache_lock(m2, "the Maven repository of the cache"):
        _run_mvn(m2, pom, out, what, hint, settings)


def _run_mvn(m2: Path, pom: Path, out: Path, what: str, hint: str, settings: Path | None) -> None:
    base = [
        "mvn",
        "-B",
        "-q",
        "--strict-checksums",
        *(["-s", str(settings)] if settings else []),
        "-f",
        str(pom),
        f"-Dmaven.repo.local={m2}",
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    attempts = [[*base, "-o"], base] if m2.is_dir() else [base]
    output = ""
    for cmd in attempts:
        try:
            result = subprocess.run(
                cmd, capture_output=True, text=True, timeout=MVN_TIMEOUT, check=False
            )
        except FileNotFoundError:
            raise KafkalabError(
                f"{what} comes from Maven Central, but `mvn` is not installed. Install Maven"
                f" (apt-get install maven), or {hint}"
            ) from None
        except subprocess.TimeoutExpired:
            raise KafkalabError(f"mvn took over {MVN_TIMEOUT}s fetching {what}; {hint}") from None
        if result.returncode == 0:
            return
        output = result.stdout + result.stderr
    errors = [line for line in output.splitlines() if "ERROR" in line][:3]
    detail = "\n".join(errors) or output.strip()[-600:]
    raise MavenError(f"mvn could not fetch {what} from Maven Central:\n{detail}\n{hint}", output)


def _copy_dependencies(pom: Path, libs: Path, cache: Path, version: str, scala: str) -> None:
    hint = _drop_hint(version, scala, cache)
    try:
        mvn_copy_dependencies(pom, libs, cache, f"the jars of Kafka {version}", hint)
    except MavenError as exc:
        if re.search(rf"(Could not find artifact|not found).*kafka_{re.escape(scala)}", exc.output):
            raise KafkalabError(
                f"Kafka {version} (Scala {scala}) is neither in the cache nor on Maven Central."
                f" Check the version, or {hint}"
            ) from None
        raise


def _drop_hint(version: str, scala: str, cache: Path) -> str:
    name = official_name(version, scala)
    return f"put the official {name} and {name}.sha512 in {cache}/"


def _classes_in(jars: Iterable[Path | bytes]) -> set[str]:
    """Dotted names of the classes in these jars (paths or jar bytes)."""
    found: set[str] = set()
    for jar in jars:
        source = io.BytesIO(jar) if isinstance(jar, bytes) else jar
        with zipfile.ZipFile(source) as zf:
            found.update(
                n[: -len(".class")].replace("/", ".") for n in zf.namelist() if n.endswith(".class")
            )
    return found


def _write_tarball(dist: Path, dest: Path) -> None:
    """Tar `dist` as its own top dir, owned by root, with bin/* executable."""

    def normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        executable = info.isdir() or Path(info.name).parent.name == "bin"
        info.mode = 0o755 if executable else 0o644
        return info

    with tarfile.open(dest, "w:gz", compresslevel=6) as tar:
        tar.add(dist, arcname=dist.name, filter=normalise)


# --- checks ------------------------------------------------------------------------------


def verify_launchers(tgz: Path) -> list[str]:
    """Names of `bin/` launchers whose main class is in none of the tarball's `libs/` jars."""
    wanted: dict[str, str] = {}
    classes: set[str] = set()
    with tarfile.open(tgz) as tar:
        for member in tar:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) != 3:
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            if parts[1] == "libs" and parts[2].endswith(".jar"):
                classes |= _classes_in([data.read()])
            elif parts[1] == "bin" and parts[2].endswith(".sh"):
                match = _RUN_CLASS_CALL.search(data.read().decode(errors="replace"))
                if match:
                    wanted[parts[2]] = match.group(1)
    return sorted(name for name, main_class in wanted.items() if main_class not in classes)
