"""The Spark artifact step (kafkalab.spark_artifact) on fake distributions: no download,
no JVM. The real build (pyspark package + Maven Central) runs in the streaming tier."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from kafkalab.artifacts import archive
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.errors import KafkalabError


def fake_spark_home(root: Path, jars: list[str]) -> Path:
    home = root / "pyspark"
    (home / "jars").mkdir(parents=True)
    for jar in jars:
        (home / "jars" / jar).write_bytes(b"jar")
    (home / "bin").mkdir()
    (home / "bin" / "spark-class").write_text("#!/bin/sh\n")
    (home / "bin" / "spark-submit.cmd").write_text("windows\n")
    (home / "sbin").mkdir()
    (home / "sbin" / "spark-daemon.sh").write_text("#!/bin/sh\n")
    (home / "python" / "lib").mkdir(parents=True)
    (home / "python" / "lib" / "pyspark.zip").write_bytes(b"zip")
    (home / "python" / "lib" / "py4j-0.10.9.9-src.zip").write_bytes(b"zip")
    return home


def fake_connector(root: Path) -> Path:
    conn = root / "connector"
    conn.mkdir()
    for jar in (
        "spark-sql-kafka-0-10_2.13-4.0.0.jar",
        "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
        "kafka-clients-3.9.0.jar",
        "commons-pool2-2.12.0.jar",
        "scala-library-2.13.15.jar",  # Spark has its own (2.13.16): keep Spark's
        "slf4j-api-1.7.36.jar",
    ):
        (conn / jar).write_bytes(b"jar")
    return conn


SPARK_JARS = ["spark-core_2.13-4.0.0.jar", "scala-library-2.13.16.jar", "slf4j-api-2.0.16.jar"]


@pytest.mark.parametrize(
    ("name", "artifact"),
    [
        ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("kafka-clients-3.9.0.jar", "kafka-clients"),
        ("scala-library-2.13.16.jar", "scala-library"),
        ("guava-33.0.0-jre.jar", "guava"),
        ("xz-1.10.jar", "xz"),
        ("jsr305-3.0.0.jar", "jsr305"),
    ],
)
def test_jar_artifact(name, artifact):
    assert spark_artifact.jar_artifact(name) == artifact


def test_extra_jars_keep_sparks_own_versions():
    added = spark_artifact.extra_jars(
        SPARK_JARS, ["kafka-clients-3.9.0.jar", "scala-library-2.13.15.jar", "slf4j-api-1.7.36.jar"]
    )
    assert added == ["kafka-clients-3.9.0.jar"]


def test_assemble_lays_out_a_spark_home_with_the_connector(tmp_path):
    home = fake_spark_home(tmp_path, SPARK_JARS)
    dist = tmp_path / "spark-4.0.0-bin-kafkalab"
    spark_artifact.assemble(home, fake_connector(tmp_path), dist, "test")
    jars = sorted(p.name for p in (dist / "jars").iterdir())
    assert jars == sorted(
        [
            *SPARK_JARS,
            "spark-sql-kafka-0-10_2.13-4.0.0.jar",
            "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
            "kafka-clients-3.9.0.jar",
            "commons-pool2-2.12.0.jar",
        ]
    )
    assert (dist / "bin" / "spark-class").exists()
    assert not (dist / "bin" / "spark-submit.cmd").exists()
    assert (dist / "python" / "lib" / "pyspark.zip").exists()
    assert "spark-sql-kafka-0-10_2.13-4.0.0.jar" in (dist / "RELEASE").read_text()


def test_assemble_refuses_a_home_without_pyspark_zip(tmp_path):
    home = fake_spark_home(tmp_path, SPARK_JARS)
    (home / "python" / "lib" / "pyspark.zip").unlink()
    with pytest.raises(KafkalabError, match=r"pyspark\.zip"):
        spark_artifact.assemble(home, fake_connector(tmp_path), tmp_path / "dist", "test")


def test_tarball_has_one_top_dir_and_executable_scripts(tmp_path):
    home = fake_spark_home(tmp_path, SPARK_JARS)
    dist = tmp_path / "spark-4.0.0-bin-kafkalab"
    spark_artifact.assemble(home, fake_connector(tmp_path), dist, "test")
    tgz = tmp_path / "out.tgz"
    archive.write_tarball(dist, tgz)
    with tarfile.open(tgz) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert {n.split("/")[0] for n in members} == {"spark-4.0.0-bin-kafkalab"}
    assert members["spark-4.0.0-bin-kafkalab/bin/spark-class"].mode == 0o755
    assert members["spark-4.0.0-bin-kafkalab/sbin/spark-daemon.sh"].mode == 0o755
    assert members["spark-4.0.0-bin-kafkalab/jars/kafka-clients-3.9.0.jar"].mode == 0o644
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())


def test_resolve_builds_once_then_reuses(tmp_path, monkeypatch):
    home = fake_spark_home(tmp_path / "src", SPARK_JARS)
    calls = []
    monkeypatch.setattr(spark_artifact, "installed_pyspark", lambda v: calls.append(v) or home)
    monkeypatch.setattr(
        spark_artifact, "kafka_connector", lambda v, c, s, scala: fake_connector(tmp_path)
    )
    cache = tmp_path / "cache"
    tgz = spark_artifact.resolve_spark("4.0.0", cache=cache)
    assert tgz == cache / "spark-4.0.0-bin-kafkalab.tgz" and tgz.exists()
    assert spark_artifact.resolve_spark("4.0.0", cache=cache) == tgz
    assert calls == ["4.0.0"]  # the second call found the tarball and built nothing


@pytest.fixture
def built(tmp_path, monkeypatch):
    """A Spark tarball built once from fakes; the list counts the builds."""
    home = fake_spark_home(tmp_path / "src", SPARK_JARS)
    connector = fake_connector(tmp_path)
    calls = []
    monkeypatch.setattr(spark_artifact, "installed_pyspark", lambda v: calls.append(v) or home)
    monkeypatch.setattr(spark_artifact, "kafka_connector", lambda v, c, s, scala: connector)
    tgz = spark_artifact.resolve_spark("4.0.0", cache=tmp_path / "cache")
    return tgz, calls


def test_built_tarball_records_its_sha512(built):
    tgz, _ = built
    record = tgz.with_name(tgz.name + ".sha512")
    assert record.read_text() == f"{hashlib.sha512(tgz.read_bytes()).hexdigest()}  {tgz.name}\n"


def test_tampered_tarball_is_refused_with_the_fix(built):
    tgz, calls = built
    with tgz.open("ab") as f:
        f.write(b"tampered")
    with pytest.raises(KafkalabError) as err:
        spark_artifact.resolve_spark("4.0.0", cache=tgz.parent)
    message = str(err.value)
    assert "no longer matches the SHA-512 recorded" in message
    assert "`kafkalab fetch --with spark`" in message
    assert calls == ["4.0.0"]


def test_tarball_without_a_record_is_built_again(built):
    tgz, calls = built
    tgz.with_name(tgz.name + ".sha512").unlink()
    tgz.write_bytes(b"left by an older kafkalab")
    assert spark_artifact.resolve_spark("4.0.0", cache=tgz.parent) == tgz
    assert calls == ["4.0.0", "4.0.0"]
    spark_artifact.resolve_spark("4.0.0", cache=tgz.parent)  # checked against the new record


def test_official_tarball_is_preferred_and_checked(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "spark-4.0.0-bin-hadoop3.tgz").write_bytes(b"not checked yet")
    monkeypatch.setattr(
        spark_artifact, "kafka_connector", lambda v, c, s, scala: fake_connector(tmp_path)
    )
    with pytest.raises(KafkalabError, match="no checksum file"):
        spark_artifact.resolve_spark("4.0.0", cache=cache)


def test_unpack_pyspark_wheel(tmp_path):
    wheel = tmp_path / "pyspark-4.0.0-py2.py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pyspark/jars/spark-core_2.13-4.0.0.jar", b"jar")
        zf.writestr("pyspark/bin/spark-class", "#!/bin/sh\n")
        zf.writestr("pyspark/python/lib/pyspark.zip", b"zip")
    home = spark_artifact.unpack_pyspark(wheel, tmp_path / "work")
    assert (home / "jars" / "spark-core_2.13-4.0.0.jar").exists()
    assert (home / "bin" / "spark-class").stat().st_mode & 0o111


def test_unpack_pyspark_sdist(tmp_path):
    sdist = tmp_path / "pyspark-4.0.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, data in {
            "pyspark-4.0.0/deps/jars/spark-core_2.13-4.0.0.jar": b"jar",
            "pyspark-4.0.0/deps/bin/spark-class": b"#!/bin/sh\n",
            "pyspark-4.0.0/lib/py4j-0.10.9.9-src.zip": b"zip",
            "pyspark-4.0.0/pyspark/__init__.py": b"",
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (tmp_path / "work").mkdir()
    home = spark_artifact.unpack_pyspark(sdist, tmp_path / "work")
    assert (home / "jars" / "spark-core_2.13-4.0.0.jar").exists()
    assert (home / "python" / "lib" / "py4j-0.10.9.9-src.zip").exists()
    with zipfile.ZipFile(home / "python" / "lib" / "pyspark.zip") as zf:
        assert "pyspark/__init__.py" in zf.namelist()


def test_connector_runs_mvn_with_its_own_settings_and_says_what_failed(tmp_path, monkeypatch):
    seen: list[list[str]] = []

    def failing_mvn(cmd, **_kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "[ERROR] Could not resolve dependencies", "")

    monkeypatch.setattr(subprocess, "run", failing_mvn)
    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.raises(KafkalabError) as err:
        spark_artifact.kafka_connector("4.0.0", cache, lambda _m: None)
    message = str(err.value)
    assert "spark-sql-kafka-0-10_2.13:4.0.0" in message
    assert "Could not resolve dependencies" in message
    assert f"into {cache}/" in message
    assert len(seen) == 1 and "-s" in seen[0] and f"-Dmaven.repo.local={cache / 'm2'}" in seen[0]
    assert "--strict-checksums" in seen[0]
    assert not spark_artifact.connector_dir("4.0.0", cache).exists()  # nothing half-made


def test_connector_without_mvn_names_the_package(tmp_path, monkeypatch):
    def no_mvn(cmd, **_kw):
        raise FileNotFoundError(cmd[0])

    monkeypatch.setattr(subprocess, "run", no_mvn)
    with pytest.raises(KafkalabError, match=r"`mvn` is not installed.*apt-get install maven"):
        spark_artifact.kafka_connector("4.0.0", tmp_path, lambda _m: None)
