"""Lab 10's Kafka Streams application as an artifact: what its build reads is hashed into
its cache path, an unchanged source is taken from the cache (checked), a changed one is
built again, mvn is asked for the cluster's Kafka version."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from kafkalab.artifacts import streams_app
from kafkalab.errors import KafkalabError

VERSION = "3.9.2"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A copy of lab 10's app/ (without a target/ of an earlier build)."""
    src = tmp_path / "app"
    shutil.copytree(streams_app.source_dir(), src, ignore=shutil.ignore_patterns("target"))
    return src


@pytest.fixture
def fake_mvn(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """mvn_run replaced by one that writes what `mvn package dependency:copy-dependencies`
    writes (the thin jar, target/lib/); returns the goals of each call."""
    calls: list[list[str]] = []

    def mvn_run(pom: Path, goals: list[str], cache: Path, what: str, hint: str) -> None:
        calls.append(goals)
        target = pom.parent / "target"
        (target / "lib").mkdir(parents=True)
        (target / f"{streams_app.NAME}.jar").write_bytes(b"jar of " + pom.read_bytes()[:20])
        (target / "lib" / f"kafka-streams-{VERSION}.jar").write_bytes(b"streams")

    monkeypatch.setattr(streams_app, "mvn_run", mvn_run)
    monkeypatch.setattr(streams_app.shutil, "which", lambda _name: "/usr/bin/javac")
    return calls


def test_the_shipped_source_is_what_the_build_reads() -> None:
    names = [p.name for p in streams_app.build_inputs(streams_app.source_dir())]
    assert names[0] == "pom.xml"
    assert {"JsonKStream.java", "Ride.java", "JsonSerde.java"} <= set(names)


def test_the_digest_follows_the_source_and_the_kafka_version(source: Path) -> None:
    first = streams_app.inputs_digest(source, VERSION)
    assert streams_app.inputs_digest(source, VERSION) == first
    assert streams_app.inputs_digest(source, "4.1.0") != first
    (source / "target").mkdir()
    (source / "target" / "leftover.jar").write_bytes(b"x")  # an IDE's build: not an input
    assert streams_app.inputs_digest(source, VERSION) == first
    java = source / "src" / "main" / "java" / "kafkalab" / "streams" / "JsonKStream.java"
    java.write_text(java.read_text().replace("groupByKey()", "groupByKey() "))
    assert streams_app.inputs_digest(source, VERSION) != first


def test_cache_path_names_the_app_the_version_and_the_inputs(source: Path, tmp_path: Path) -> None:
    path = streams_app.app_path(VERSION, source, tmp_path / "cache")
    digest = streams_app.inputs_digest(source, VERSION)
    assert path == tmp_path / "cache" / "streams-app" / f"{streams_app.NAME}-{VERSION}-{digest}.tgz"


def test_built_once_then_from_the_cache_then_again_when_the_source_changes(
    source: Path, tmp_path: Path, fake_mvn: list[list[str]]
) -> None:
    cache = tmp_path / "cache"
    first = streams_app.resolve_streams_app(VERSION, source, cache)
    assert len(fake_mvn) == 1
    assert "package" in fake_mvn[0] and f"-Dkafka.version={VERSION}" in fake_mvn[0]
    with tarfile.open(first) as tar:
        names = tar.getnames()
    top = first.name.removesuffix(".tgz")
    assert f"{top}/{streams_app.NAME}.jar" in names
    assert f"{top}/lib/kafka-streams-{VERSION}.jar" in names
    assert first.with_name(first.name + ".sha512").exists()
    assert not (source / "target").exists()  # built on a copy, not in the repository

    assert streams_app.resolve_streams_app(VERSION, source, cache) == first
    assert len(fake_mvn) == 1  # from the cache

    pom = source / "pom.xml"
    pom.write_text(pom.read_text().replace("<version>1.0</version>", "<version>1.1</version>"))
    second = streams_app.resolve_streams_app(VERSION, source, cache)
    assert second != first and len(fake_mvn) == 2


def test_a_damaged_build_in_the_cache_is_refused_with_the_fix(
    source: Path, tmp_path: Path, fake_mvn: list[list[str]]
) -> None:
    built = streams_app.resolve_streams_app(VERSION, source, tmp_path / "cache")
    built.write_bytes(b"damaged")
    with pytest.raises(KafkalabError, match="kafkalab fetch --streams"):
        streams_app.resolve_streams_app(VERSION, source, tmp_path / "cache")


def test_no_jdk_is_one_clear_error(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streams_app.shutil, "which", lambda _name: None)
    with pytest.raises(KafkalabError, match=r"needs a JDK .*openjdk-17-jdk-headless"):
        streams_app.resolve_streams_app(VERSION, source, tmp_path / "cache")


def test_the_build_runs_mvn_on_the_cache_repository_with_strict_checksums(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real mvn_run, with subprocess faked: the goals, the Kafka version, the cache's
    own local repository; a failed build leaves nothing in the cache."""
    import subprocess

    seen: list[list[str]] = []

    def mvn_fails(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "[ERROR] Could not resolve kafka-streams")

    monkeypatch.setattr(subprocess, "run", mvn_fails)
    monkeypatch.setattr(streams_app.shutil, "which", lambda _name: "/usr/bin/javac")
    cache = tmp_path / "cache"
    with pytest.raises(KafkalabError, match="Could not resolve kafka-streams"):
        streams_app.resolve_streams_app(VERSION, source, cache)
    cmd = seen[-1]
    assert "--strict-checksums" in cmd and f"-Dmaven.repo.local={cache / 'm2'}" in cmd
    assert cmd[-3:] == ["package", "dependency:copy-dependencies", f"-Dkafka.version={VERSION}"]
    assert not list((cache / "streams-app").glob("*.tgz"))
