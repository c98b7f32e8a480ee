"""The Kafka distribution tarball: official from the cache or a mirror, else built from Maven.

`resolve_kafka` returns a `.tgz` in the official Apache layout (one top dir
`kafka_<scala>-<version>/` with `bin/`, `libs/`, `config/`). Order: the official tarball
already in the cache (checked against its `.sha512`), else a download from
`KAFKALAB_KAFKA_MIRROR` (checked), else one assembled from Maven Central jars with our own
launchers (`kafka_<scala>-<version>-maven.tgz`).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from string import Template

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
    if official.exists():
        verify_sha512(official)
        return official
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        return download_from_mirror(mirror, version, scala, cache, say)
    assembled = cache / assembled_name(version, scala)
    if assembled.exists():
        return assembled
    return assemble_from_maven(version, scala, cache, say)


def unpacked(tgz: Path) -> Path:
    """The Kafka home inside `tgz`, unpacked once next to it (for controller-side tools)."""
    dest = tgz.parent / "unpacked" / tgz.name.removesuffix(".tgz")
    done = dest / ".complete"
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


# --- mirror ------------------------------------------------------------------------------


def download_from_mirror(mirror: str, version: str, scala: str, cache: Path, say: Progress) -> Path:
    """Fetch the official tarball and its `.sha512` from a mirror, verify, keep in cache."""
    name = official_name(version, scala)
    url = f"{mirror.rstrip('/')}/{version}/{name}"
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / name
    say(f"downloading {url}")
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as tmp:
        tgz, checksum = Path(tmp) / name, Path(tmp) / (name + ".sha512")
        _fetch(url + ".sha512", checksum)
        _fetch(url, tgz)
        verify_sha512(tgz, checksum)
        os.replace(checksum, target.with_name(checksum.name))
        os.replace(tgz, target)
    return target


def _fetch(url: str, dest: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
            shutil.copyfileobj(response, out, _CHUNK)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise KafkalabError(
            f"could not download {url}: {reason}. Check {MIRROR_ENV}, or unset it to"
            " assemble Kafka from Maven Central."
        ) from None


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
        os.replace(partial, target)
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

    `what` names the thing fetched in errors, `hint` says what to do instead."""
    m2 = cache / "m2"
    base = [
        "mvn",
        "-B",
        "-q",
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
