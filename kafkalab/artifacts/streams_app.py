"""Lab 10's Kafka Streams application, built once with Maven from the lab's own source.

`resolve_streams_app` returns `<cache>/streams-app/rides-pulocation-count-<kafka>-<inputs>.tgz`:
one top dir with the thin application jar and `lib/`, its runtime jars (kafka-streams,
kafka-clients, rocksdbjni, jackson, slf4j), run with `java -cp '<dir>/*:<dir>/lib/*'`.
kafkalab's Kafka assembled from Maven has neither kafka-streams nor rocksdbjni in its
`libs/`, so the application brings its own instead of borrowing the machine's.

`<inputs>` is a digest of what the build reads (the pom, every file under `src/`, the
Kafka version): a changed source builds again, an unchanged one is taken from the cache
(checked against the SHA-512 recorded when it was built). The build runs on a copy of the
source (nothing written into the repository) with the cache's Maven repository: offline
once `kafkalab fetch --streams` or a first run has filled it.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from kafkalab.artifacts.archive import record_and_replace, recorded, verify_recorded, write_tarball
from kafkalab.artifacts.cache import Progress, cache_dir, cache_lock
from kafkalab.artifacts.maven import mvn_run
from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root

NAME = "rides-pulocation-count"
MAIN_CLASS = "kafkalab.streams.JsonKStream"


def source_dir() -> Path:
    """The application's Maven project, in lab 10's folder."""
    return repo_root() / "labs" / "10-kafka-streams" / "app"


def build_inputs(source: Path) -> list[Path]:
    """What the build reads: the pom and every file under src/, in a stable order."""
    return [source / "pom.xml", *sorted(p for p in (source / "src").rglob("*") if p.is_file())]


def inputs_digest(source: Path, kafka_version: str) -> str:
    """SHA-256 (first 16 hex digits) of the build's inputs: their paths, contents and the
    Kafka version the application is built against."""
    h = hashlib.sha256(f"kafka {kafka_version}\n".encode())
    for path in build_inputs(source):
        h.update(f"{path.relative_to(source).as_posix()}\n".encode())
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def app_path(kafka_version: str, source: Path | None = None, cache: Path | None = None) -> Path:
    """Where the build of this source against this Kafka lives in the cache."""
    source = source or source_dir()
    digest = inputs_digest(source, kafka_version)
    return (cache or cache_dir()) / "streams-app" / f"{NAME}-{kafka_version}-{digest}.tgz"


def resolve_streams_app(
    kafka_version: str,
    source: Path | None = None,
    cache: Path | None = None,
    progress: Progress | None = None,
) -> Path:
    """The checked application tarball for this source and Kafka, built on first use."""
    source = source or source_dir()
    cache = cache or cache_dir()
    target = app_path(kafka_version, source, cache)
    what = f"the Kafka Streams application of lab 10 (Kafka {kafka_version})"
    with cache_lock(target, what, progress):
        if target.exists() and recorded(target).exists():
            verify_recorded(target, "kafkalab fetch --streams")
            return target
        build(source, kafka_version, target, cache, progress or (lambda _msg: None))
    return target


def build(source: Path, kafka_version: str, target: Path, cache: Path, say: Progress) -> None:
    """`mvn package` of a copy of `source` against `kafka_version`, packed into `target`."""
    if shutil.which("javac") is None:
        raise KafkalabError(
            "building lab 10's Kafka Streams application needs a JDK (javac), and this host"
            " has none: sudo apt-get install openjdk-17-jdk-headless (scripts/setup.sh does)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"building {NAME} against kafka-streams {kafka_version} with Maven (first time: ~1 min)")
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as tmp:
        work = Path(tmp) / "src"
        shutil.copytree(source, work, ignore=shutil.ignore_patterns("target"))
        mvn_run(
            work / "pom.xml",
            ["package", "dependency:copy-dependencies", f"-Dkafka.version={kafka_version}"],
            cache,
            f"kafka-streams {kafka_version} and the build plugins of {NAME}",
            f"check the version, or build once where Maven Central is reachable and copy {cache}",
        )
        dist = Path(tmp) / target.name.removesuffix(".tgz")
        dist.mkdir()
        shutil.copy2(work / "target" / f"{NAME}.jar", dist / f"{NAME}.jar")
        shutil.copytree(work / "target" / "lib", dist / "lib")
        partial = Path(tmp) / target.name
        write_tarball(dist, partial, compresslevel=1)
        record_and_replace(partial, target)
    say(f"wrote {target} ({target.stat().st_size / 1e6:.0f} MB)")


def classpath(home: Path) -> str:
    """The `java -cp` of an unpacked application (its jar, then its libs)."""
    return f"{home / (NAME + '.jar')}:{home / 'lib'}/*"
