"""The Kafka distribution tarball: official from the cache or a mirror, else built from Maven.

`resolve_kafka` returns a `.tgz` in the official Apache layout (one top dir
`kafka_<scala>-<version>/` with `bin/`, `libs/`, `config/`). Order: the official tarball
already in the cache (checked against its `.sha512`), else a download from
`KAFKALAB_KAFKA_MIRROR` (https or a local directory; checked), else one assembled from Maven
Central jars (strict checksums) with our own launchers (`kafka_<scala>-<version>-maven.tgz`).
The checksums, the mirror and the tarball writer are kafkalab.artifacts.archive's; the
cache lock kafkalab.artifacts.cache's; mvn kafkalab.artifacts.maven's.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from string import Template

from kafkalab.artifacts.archive import (
    download_file,
    mirror_url,
    record_and_replace,
    recorded,
    verify_recorded,
    verify_sha512,
    write_tarball,
)
from kafkalab.artifacts.cache import Progress, cache_dir, cache_lock
from kafkalab.artifacts.maven import MavenError, mvn_copy_dependencies
from kafkalab.errors import KafkalabError
from kafkalab.paths import package_data

DEFAULT_SCALA = "2.13"
MIRROR_ENV = "KAFKALAB_KAFKA_MIRROR"

# the main class a launcher hands to kafka-run-class.sh, after any $VARS (official or ours)
_RUN_CLASS_CALL = re.compile(
    r"kafka-run-class\.sh\"?(?:\s+\"?\$\{?\w+\}?\"?)*\s+([A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)+)"
)


@dataclass(frozen=True)
class Line:
    """What an assembly of one Kafka line is made of: the pom (kafkalab/data/maven/), the
    config dir copied in as `config/`, and the server's default logging option."""

    pom: str
    config: str
    server_log4j_opts: str


# 4.0 moved from log4j 1 (reload4j) to log4j2 and left ZooKeeper out; the pom comments say
# which jars each line takes. `$base_dir` is the launcher's own variable (server.sh.in).
LINES = {
    3: Line(
        "pom.xml.in", "config", "-Dlog4j.configuration=file:$base_dir/../config/log4j.properties"
    ),
    4: Line(
        "pom-4.xml.in", "config-4", "-Dlog4j2.configurationFile=$base_dir/../config/log4j2.yaml"
    ),
}


def kafka_line(version: str) -> Line:
    """The assembly of this Kafka version's line: before 4.0 the 3.x one, else the 4.x one
    (the newest kafkalab knows; a release Maven Central lacks fails there, with the fix)."""
    return LINES[3] if int(version.split(".", 1)[0]) < 4 else LINES[4]


def release_dir(version: str, scala: str = DEFAULT_SCALA) -> str:
    """The release's top directory in its archive (Apache's layout), as unpacked."""
    return f"kafka_{scala}-{version}"


def official_name(version: str, scala: str = DEFAULT_SCALA) -> str:
    return f"{release_dir(version, scala)}.tgz"


def assembled_name(version: str, scala: str = DEFAULT_SCALA) -> str:
    return f"{release_dir(version, scala)}-maven.tgz"


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
        download_file(url + ".sha512", checksum, hint)
        download_file(url, tgz, hint)
        verify_sha512(tgz, checksum)
        os.replace(checksum, target.with_name(checksum.name))
        os.replace(tgz, target)
    return target


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
    table = tomllib.loads((package_data() / "launchers" / "tools.toml").read_text())["launcher"]
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
    templates = package_data() / "launchers"
    log4j_opts = kafka_line(version).server_log4j_opts
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
            log4j_opts=log4j_opts,
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
    top = release_dir(version, scala)
    line = kafka_line(version)
    cache.mkdir(parents=True, exist_ok=True)
    say(f"assembling Kafka {version} from Maven Central (first time: ~1 min)")
    with tempfile.TemporaryDirectory(prefix=".assemble-", dir=cache) as tmp:
        work = Path(tmp)
        pom = work / "pom.xml"
        pom.write_text(
            Template((package_data() / "maven" / line.pom).read_text()).substitute(
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
        shutil.copytree(package_data() / "maven" / line.config, dist / "config")
        partial = work / target.name
        write_tarball(dist, partial)
        record_and_replace(partial, target)
    say(f"wrote {target} ({target.stat().st_size / 1e6:.0f} MB)")
    return target


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
