"""The Kafka artifact step: checksums, cache, mirror, launchers, Maven assembly (slow)."""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from kafkalab import artifacts
from kafkalab.artifacts import (
    launcher_table,
    parse_sha512,
    render_launchers,
    resolve_kafka,
    verify_launchers,
    verify_sha512,
)
from kafkalab.errors import KafkalabError

VERSION = "3.9.2"
TOP = f"kafka_2.13-{VERSION}"
NAME = f"{TOP}.tgz"


def gpg_style(digest: str, name: str) -> str:
    """What Apache publishes: `gpg --print-md SHA512`, upper-case groups wrapped over lines."""
    groups = [digest[i : i + 8].upper() for i in range(0, len(digest), 8)]
    indent = " " * (len(name) + 2)
    lines = [" ".join(groups[i : i + 6]) for i in range(0, len(groups), 6)]
    return f"{name}: " + f"\n{indent}".join(lines) + "\n"


def make_jar(path: Path, classes: list[str]) -> None:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for name in classes:
            jar.writestr(name.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")


def make_dist(where: Path, launchers: dict[str, str], classes: list[str]) -> Path:
    """A small but well-formed Kafka tarball: one top dir with bin/, libs/, config/."""
    top = where / "src" / TOP
    for sub in ("bin", "libs", "config"):
        (top / sub).mkdir(parents=True)
    for name, main_class in launchers.items():
        script = f'#!/bin/bash\nexec $(dirname $0)/kafka-run-class.sh {main_class} "$@"\n'
        (top / "bin" / name).write_text(script)
    make_jar(top / "libs" / f"kafka-tools-{VERSION}.jar", classes)
    (top / "config" / "server.properties").write_text("node.id=1\n")
    tgz = where / NAME
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(top, arcname=TOP)
    return tgz


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    topics = "org.apache.kafka.tools.TopicCommand"
    return make_dist(tmp_path / "build", {"kafka-topics.sh": topics}, [topics])


@pytest.fixture(autouse=True)
def no_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(artifacts.MIRROR_ENV, raising=False)


def sha512(path: Path) -> str:
    return hashlib.sha512(path.read_bytes()).hexdigest()


# --- checksums ---------------------------------------------------------------------------


def test_parses_apache_gpg_style_checksum() -> None:
    digest = hashlib.sha512(b"kafka").hexdigest()
    text = gpg_style(digest, NAME)
    assert "\n" in text.strip() and text.split(":")[1].split()[0].isupper()
    assert parse_sha512(text) == digest


@pytest.mark.parametrize(
    "template",
    ["{digest}  {name}\n", "{digest} *{name}\n", "{upper}\n", "SHA512 ({name}) = {digest}\n"],
)
def test_parses_sha512sum_and_bsd_styles(template: str) -> None:
    digest = hashlib.sha512(b"kafka").hexdigest()
    text = template.format(digest=digest, upper=digest.upper(), name=NAME)
    assert parse_sha512(text) == digest


@pytest.mark.parametrize("text", ["", "not a checksum\n", f"{NAME}: 0A1B 2C3D\n"])
def test_rejects_text_without_a_sha512(text: str) -> None:
    with pytest.raises(KafkalabError, match="128 hex digits"):
        parse_sha512(text)


def test_missing_checksum_file_says_where_to_put_it(dist: Path) -> None:
    with pytest.raises(KafkalabError) as err:
        verify_sha512(dist)
    assert f"{NAME}.sha512" in str(err.value) and str(dist.parent) in str(err.value)


def test_checksum_mismatch_is_a_clear_error(dist: Path) -> None:
    wrong = hashlib.sha512(b"something else").hexdigest()
    (dist.parent / f"{NAME}.sha512").write_text(gpg_style(wrong, NAME))
    with pytest.raises(KafkalabError, match=r"does not match .*\.sha512.*fetch the tarball"):
        verify_sha512(dist)


# --- resolution order --------------------------------------------------------------------


def test_cache_dir_follows_kafkalab_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path))
    assert artifacts.cache_dir() == tmp_path / "artifacts"


def test_official_tarball_in_cache_is_verified_and_used(dist: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cached = cache / NAME
    cached.write_bytes(dist.read_bytes())
    (cache / f"{NAME}.sha512").write_text(gpg_style(sha512(dist), NAME))
    assert resolve_kafka(VERSION, cache=cache) == cached


def test_official_tarball_without_checksum_is_refused(dist: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / NAME).write_bytes(dist.read_bytes())
    with pytest.raises(KafkalabError, match="no checksum file"):
        resolve_kafka(VERSION, cache=cache)


def test_mirror_download_is_verified_and_cached(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror"
    (mirror / VERSION).mkdir(parents=True)
    (mirror / VERSION / NAME).write_bytes(dist.read_bytes())
    (mirror / VERSION / f"{NAME}.sha512").write_text(gpg_style(sha512(dist), NAME))
    monkeypatch.setenv(artifacts.MIRROR_ENV, mirror.as_uri() + "/")
    cache = tmp_path / "cache"
    said: list[str] = []

    tgz = resolve_kafka(VERSION, cache=cache, progress=said.append)

    assert tgz == cache / NAME and sha512(tgz) == sha512(dist)
    assert (cache / f"{NAME}.sha512").exists()
    assert artifacts.cached_kafka(cache) == [tgz]
    assert said == [f"downloading {mirror.as_uri()}/{VERSION}/{NAME}"]
    assert sorted(p.name for p in cache.iterdir()) == [NAME, f"{NAME}.sha512"]
    monkeypatch.delenv(artifacts.MIRROR_ENV)
    assert resolve_kafka(VERSION, cache=cache) == tgz  # from the cache now


def test_mirror_with_bad_checksum_keeps_nothing(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror"
    (mirror / VERSION).mkdir(parents=True)
    (mirror / VERSION / NAME).write_bytes(dist.read_bytes()[:-10])
    (mirror / VERSION / f"{NAME}.sha512").write_text(gpg_style(sha512(dist), NAME))
    monkeypatch.setenv(artifacts.MIRROR_ENV, mirror.as_uri())
    cache = tmp_path / "cache"
    with pytest.raises(KafkalabError, match="does not match"):
        resolve_kafka(VERSION, cache=cache)
    assert list(cache.iterdir()) == []


def test_mirror_without_the_version_names_the_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(artifacts.MIRROR_ENV, (tmp_path / "empty").as_uri())
    with pytest.raises(KafkalabError, match=rf"could not download file://.*{NAME}.*MIRROR"):
        resolve_kafka(VERSION, cache=tmp_path / "cache")


def test_unknown_version_names_cache_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_mvn(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        out = "[ERROR] Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central"
        return subprocess.CompletedProcess(cmd, 1, out, "")

    monkeypatch.setattr(subprocess, "run", fake_mvn)
    cache = tmp_path / "cache"
    with pytest.raises(KafkalabError) as err:
        resolve_kafka("9.9.9", cache=cache)
    message = str(err.value)
    assert "neither in the cache nor on Maven Central" in message
    assert "kafka_2.13-9.9.9.tgz" in message and str(cache) in message


def test_missing_mvn_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_mvn(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(cmd[0])

    monkeypatch.setattr(subprocess, "run", no_mvn)
    with pytest.raises(KafkalabError, match="`mvn` is not installed"):
        resolve_kafka(VERSION, cache=tmp_path / "cache")


# --- launchers ---------------------------------------------------------------------------


def test_launcher_table_covers_the_tools_the_labs_use() -> None:
    names = {launcher.name for launcher in launcher_table()}
    assert {
        "kafka-run-class.sh",
        "kafka-server-start.sh",
        "kafka-server-stop.sh",
        "kafka-storage.sh",
        "kafka-topics.sh",
        "kafka-console-producer.sh",
        "kafka-console-consumer.sh",
        "kafka-consumer-groups.sh",
        "kafka-get-offsets.sh",
        "kafka-broker-api-versions.sh",
        "kafka-metadata-quorum.sh",
        "kafka-reassign-partitions.sh",
        "kafka-leader-election.sh",
        "kafka-producer-perf-test.sh",
        "kafka-consumer-perf-test.sh",
        "kafka-configs.sh",
        "zookeeper-server-start.sh",
        "zookeeper-shell.sh",
    } <= names


def test_render_takes_the_first_class_present_in_the_jars() -> None:
    newest = {c for launcher in launcher_table() for c in launcher.classes[:1]}
    scripts = render_launchers(VERSION, newest | {"kafka.admin.TopicCommand"})
    assert "org.apache.kafka.tools.TopicCommand" in scripts["kafka-topics.sh"]
    older = newest - {"org.apache.kafka.tools.TopicCommand"} | {"kafka.admin.TopicCommand"}
    assert "kafka.admin.TopicCommand" in render_launchers(VERSION, older)["kafka-topics.sh"]
    assert "-daemon" in scripts["kafka-server-start.sh"]
    assert "kafka\\.Kafka" in scripts["kafka-server-stop.sh"]


def test_render_drops_optional_and_refuses_missing_required() -> None:
    required = {
        c for launcher in launcher_table() if not launcher.optional for c in launcher.classes[:1]
    }
    assert "zookeeper-shell.sh" not in render_launchers(VERSION, required)
    with pytest.raises(KafkalabError, match=r"kafka-topics\.sh"):
        render_launchers(VERSION, required - {"org.apache.kafka.tools.TopicCommand"})


def test_verify_launchers_reports_classes_missing_from_libs(tmp_path: Path) -> None:
    tgz = make_dist(
        tmp_path,
        {"kafka-topics.sh": "org.apache.kafka.tools.TopicCommand", "kafka-gone.sh": "kafka.Gone"},
        ["org.apache.kafka.tools.TopicCommand"],
    )
    assert verify_launchers(tgz) == ["kafka-gone.sh"]


# --- the real thing ----------------------------------------------------------------------


@pytest.mark.slow
def test_maven_assembly(tmp_path: Path) -> None:
    """Assemble 3.9.2 into the real cache (reused afterwards) and run two of its tools."""
    tgz = resolve_kafka(VERSION, progress=print)
    assert tgz.name in (NAME, f"{TOP}-maven.tgz")
    assert verify_launchers(tgz) == []
    with tarfile.open(tgz) as tar:
        assert {m.name.split("/")[0] for m in tar} == {TOP}
        tar.extractall(tmp_path, filter="tar")
    bin_dir = tmp_path / TOP / "bin"

    def run(*argv: str) -> str:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path
        )
        return done.stdout.strip()

    assert len(run(str(bin_dir / "kafka-storage.sh"), "random-uuid")) == 22
    assert VERSION in run(str(bin_dir / "kafka-topics.sh"), "--version")
