"""The Kafka artifact step: checksums, cache, mirror, launchers, Maven assembly (slow)."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab.artifacts import archive
from kafkalab.artifacts import cache as artifact_cache
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import maven as maven_artifact
from kafkalab.artifacts.archive import parse_sha512, verify_sha512
from kafkalab.artifacts.kafka import (
    launcher_table,
    render_launchers,
    resolve_kafka,
    verify_launchers,
)
from kafkalab.errors import KafkalabError
from tests.unit.artifacts.launchers import USED

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
    monkeypatch.delenv(kafka_artifact.MIRROR_ENV, raising=False)


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
    assert artifact_cache.cache_dir() == tmp_path / "artifacts"


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
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, mirror.as_uri() + "/")
    cache = tmp_path / "cache"
    said: list[str] = []

    tgz = resolve_kafka(VERSION, cache=cache, progress=said.append)

    assert tgz == cache / NAME and sha512(tgz) == sha512(dist)
    assert (cache / f"{NAME}.sha512").exists()
    assert kafka_artifact.cached_kafka(cache) == [tgz]
    assert said == [f"downloading {mirror.as_uri()}/{VERSION}/{NAME}"]
    assert sorted(p.name for p in cache.iterdir() if p.name != ".locks") == [NAME, f"{NAME}.sha512"]
    monkeypatch.delenv(kafka_artifact.MIRROR_ENV)
    assert resolve_kafka(VERSION, cache=cache) == tgz  # from the cache now


def test_mirror_with_bad_checksum_keeps_nothing(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror"
    (mirror / VERSION).mkdir(parents=True)
    (mirror / VERSION / NAME).write_bytes(dist.read_bytes()[:-10])
    (mirror / VERSION / f"{NAME}.sha512").write_text(gpg_style(sha512(dist), NAME))
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, mirror.as_uri())
    cache = tmp_path / "cache"
    with pytest.raises(KafkalabError, match="does not match"):
        resolve_kafka(VERSION, cache=cache)
    assert [p for p in cache.iterdir() if p.name != ".locks"] == []


def test_mirror_without_the_version_names_the_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, (tmp_path / "empty").as_uri())
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


# --- downloads checked: Maven, mirrors ------------------------------------------------------


def test_mvn_runs_with_strict_checksums_offline_and_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def offline_misses(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1 if "-o" in cmd else 0, "", "")

    monkeypatch.setattr(subprocess, "run", offline_misses)
    (tmp_path / "m2").mkdir()  # a local repository: offline is tried first
    maven_artifact.mvn_copy_dependencies(tmp_path / "pom.xml", tmp_path / "out", tmp_path, "x", "y")
    assert len(seen) == 2 and "-o" in seen[0] and "-o" not in seen[1]
    assert all("--strict-checksums" in cmd for cmd in seen)


class FakeResponse(io.BytesIO):
    """What urlopen returns: a readable body that knows the URL it ended at."""

    def __init__(self, body: bytes, final_url: str) -> None:
        super().__init__(body)
        self.final_url = final_url

    def geturl(self) -> str:
        return self.final_url


def serve(
    monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes], redirect: Callable[[str], str] = str
) -> list[str]:
    """Replace urlopen with one serving `files` by URL; returns the URLs asked for."""
    asked: list[str] = []

    def urlopen(url: str, timeout: float = 0) -> FakeResponse:
        asked.append(url)
        if url not in files:
            raise urllib.error.URLError("404 Not Found")
        return FakeResponse(files[url], redirect(url))

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return asked


@pytest.mark.parametrize("mirror", ["http://mirror.example/kafka", "ftp://mirror.example/kafka"])
def test_mirror_without_https_is_refused_before_any_download(
    mirror: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = serve(monkeypatch, {})
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, mirror)
    with pytest.raises(KafkalabError) as err:
        resolve_kafka(VERSION, cache=tmp_path / "cache")
    message = str(err.value)
    assert "\n" not in message and kafka_artifact.MIRROR_ENV in message and "https://" in message
    assert asked == []


def test_https_mirror_is_downloaded_and_checked(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"https://mirror.example/kafka/{VERSION}/{NAME}"
    asked = serve(
        monkeypatch,
        {url: dist.read_bytes(), f"{url}.sha512": gpg_style(sha512(dist), NAME).encode()},
    )
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, "https://mirror.example/kafka/")
    cache = tmp_path / "cache"
    assert resolve_kafka(VERSION, cache=cache) == cache / NAME
    assert asked == [f"{url}.sha512", url]
    assert sha512(cache / NAME) == sha512(dist)


def test_https_mirror_redirecting_to_http_is_refused(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"https://mirror.example/kafka/{VERSION}/{NAME}"
    files = {url: dist.read_bytes(), f"{url}.sha512": gpg_style(sha512(dist), NAME).encode()}
    serve(monkeypatch, files, redirect=lambda u: u.replace("https:", "http:"))
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, "https://mirror.example/kafka")
    cache = tmp_path / "cache"
    with pytest.raises(KafkalabError, match=r"redirects to http://.*not https"):
        resolve_kafka(VERSION, cache=cache)
    assert not (cache / NAME).exists()


def test_mirror_may_be_a_local_directory(
    dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror"
    (mirror / VERSION).mkdir(parents=True)
    (mirror / VERSION / NAME).write_bytes(dist.read_bytes())
    (mirror / VERSION / f"{NAME}.sha512").write_text(gpg_style(sha512(dist), NAME))
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, str(mirror))
    assert resolve_kafka(VERSION, cache=tmp_path / "cache") == tmp_path / "cache" / NAME
    monkeypatch.setenv(kafka_artifact.MIRROR_ENV, str(tmp_path / "no-such-dir"))
    with pytest.raises(KafkalabError, match="no such directory"):
        resolve_kafka(VERSION, cache=tmp_path / "other-cache")


def test_confluent_mirror_without_https_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = serve(monkeypatch, {})
    monkeypatch.setenv(ksqldb_artifact.MIRROR_ENV, "http://packages.example/archive")
    with pytest.raises(KafkalabError, match=rf"{ksqldb_artifact.MIRROR_ENV}=http://.*https://"):
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)
    assert asked == []


# --- the assembled tarball: recorded hash, lock ---------------------------------------------


def wait_until(condition: Callable[[], object], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


class FakeMaven:
    """Stands in for `mvn dependency:copy-dependencies`: one jar holding every main class
    the launchers need. `gate`, when set, holds the first build until the test opens it."""

    def __init__(self) -> None:
        self.runs = 0
        self.started = threading.Event()
        self.gate: threading.Event | None = None

    def __call__(self, pom: Path, libs: Path, cache: Path, version: str, scala: str) -> None:
        self.runs += 1
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10), "the test never opened the gate"
        libs.mkdir(parents=True)
        classes = sorted({t.classes[0] for t in launcher_table() if t.kind != "static"})
        make_jar(libs / f"kafka-tools-{version}.jar", classes)


@pytest.fixture
def maven(monkeypatch: pytest.MonkeyPatch) -> FakeMaven:
    fake = FakeMaven()
    monkeypatch.setattr(kafka_artifact, "_copy_dependencies", fake)
    return fake


def test_assembled_tarball_records_its_hash_and_is_reused(maven: FakeMaven, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tgz = resolve_kafka(VERSION, cache=cache)
    assert tgz == cache / f"{TOP}-maven.tgz"
    record = cache / f"{TOP}-maven.tgz.sha512"
    assert record.read_text() == f"{sha512(tgz)}  {tgz.name}\n"
    assert resolve_kafka(VERSION, cache=cache) == tgz
    assert maven.runs == 1


def test_tampered_assembled_tarball_is_refused_with_the_fix(
    maven: FakeMaven, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    tgz = resolve_kafka(VERSION, cache=cache)
    data = bytearray(tgz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tgz.write_bytes(bytes(data))
    with pytest.raises(KafkalabError) as err:
        resolve_kafka(VERSION, cache=cache)
    message = str(err.value)
    assert "no longer matches the SHA-512 recorded" in message
    assert f"Delete it and {tgz.name}.sha512" in message and "`kafkalab fetch`" in message
    assert maven.runs == 1  # refused, not silently rebuilt


def test_assembled_tarball_without_a_record_is_built_again(
    maven: FakeMaven, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    tgz = resolve_kafka(VERSION, cache=cache)
    (cache / f"{tgz.name}.sha512").unlink()  # as an older kafkalab left it
    said: list[str] = []
    assert resolve_kafka(VERSION, cache=cache, progress=said.append) == tgz
    assert maven.runs == 2 and (cache / f"{tgz.name}.sha512").exists()
    assert any("no recorded SHA-512" in line for line in said)


def test_two_builders_take_turns_and_the_second_finds_it_built(
    maven: FakeMaven, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    maven.gate = threading.Event()
    results: dict[str, Path] = {}
    said: dict[str, list[str]] = {"first": [], "second": []}

    def fetch(name: str) -> None:
        results[name] = resolve_kafka(VERSION, cache=cache, progress=said[name].append)

    first = threading.Thread(target=fetch, args=("first",))
    first.start()
    assert maven.started.wait(10)  # the first holds the lock, inside its build
    second = threading.Thread(target=fetch, args=("second",))
    second.start()
    wait_until(lambda: said["second"])
    assert not results  # both are still waiting: one on the gate, one on the lock
    maven.gate.set()
    first.join(10)
    second.join(10)
    assert maven.runs == 1
    assert results["first"] == results["second"] == cache / f"{TOP}-maven.tgz"
    assert said["second"] == [
        f"another kafkalab (pid {os.getpid()}) is building Kafka {VERSION}; waiting for it"
    ]
    archive.verify_recorded(results["second"], "kafkalab fetch")


def test_the_lock_holds_across_processes(tmp_path: Path) -> None:
    """A builder in another process keeps a checker out until it is done, and is named."""
    target = tmp_path / "thing.tgz"
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from kafkalab.artifacts import cache as artifact_cache\n"
        "with artifact_cache.cache_lock(Path(sys.argv[1]), 'the thing'):\n"
        "    print('held', flush=True)\n    sys.stdin.readline()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "held\n"
        said: list[str] = []
        inside = threading.Event()

        def check() -> None:
            with artifact_cache.cache_lock(target, "the thing", said.append, shared=True):
                inside.set()

        checker = threading.Thread(target=check)
        checker.start()
        wait_until(lambda: said)
        assert not inside.is_set()
        assert said == [f"another kafkalab (pid {child.pid}) is building the thing; waiting for it"]
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(10) == 0
        checker.join(10)
        assert inside.is_set()
    finally:
        child.kill()
        child.wait()


def test_a_builder_waits_for_checkers(tmp_path: Path) -> None:
    target = tmp_path / "thing.tgz"
    said: list[str] = []
    built = threading.Event()

    def build() -> None:
        with artifact_cache.cache_lock(target, "the thing", said.append):
            built.set()

    with artifact_cache.cache_lock(target, "the thing", shared=True):
        builder = threading.Thread(target=build)
        builder.start()
        wait_until(lambda: said)
        assert not built.is_set()
    builder.join(10)
    assert built.is_set()
    assert said == ["another kafkalab is checking the thing; waiting for it"]


# --- launchers ---------------------------------------------------------------------------


def test_launcher_table_covers_the_tools_the_labs_use() -> None:
    names = {launcher.name for launcher in launcher_table()}
    assert USED | {"zookeeper-server-start.sh", "zookeeper-shell.sh"} <= names


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
