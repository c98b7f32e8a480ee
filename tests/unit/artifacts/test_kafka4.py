"""The Kafka 4.x assembly: the 4.x pom and config, log4j2, and every launcher the labs use
resolving to a class that exists in the assembled jars."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts.kafka import kafka_line, launcher_table, render_launchers, resolve_kafka
from kafkalab.paths import package_data
from kafkalab.topology import SUPPORTED_KAFKA_VERSIONS
from tests import host_side
from tests.unit.artifacts.launchers import USED

VERSION = "4.3.1"
TOP = f"kafka_2.13-{VERSION}"


def test_4x_is_supported_and_3_9_2_stays() -> None:
    assert VERSION in SUPPORTED_KAFKA_VERSIONS
    assert "3.9.2" in SUPPORTED_KAFKA_VERSIONS


@pytest.mark.parametrize(
    ("version", "pom", "config", "log4j"),
    [
        ("3.9.2", "pom.xml.in", "config", "-Dlog4j.configuration=file:"),
        ("4.3.1", "pom-4.xml.in", "config-4", "-Dlog4j2.configurationFile="),
    ],
)
def test_each_line_has_its_pom_config_and_logging(
    version: str, pom: str, config: str, log4j: str
) -> None:
    line = kafka_line(version)
    assert (line.pom, line.config) == (pom, config)
    assert line.server_log4j_opts.startswith(log4j)
    assert (package_data() / "maven" / pom).is_file()
    assert (package_data() / "maven" / config / "server.properties").is_file()
    classes = {c for launcher in launcher_table() for c in launcher.classes[:1]}
    start = render_launchers(version, classes)["kafka-server-start.sh"]
    assert f'KAFKA_LOG4J_OPTS:-"{line.server_log4j_opts}"' in start


def test_the_4x_line_logs_through_log4j2_and_has_no_zookeeper() -> None:
    maven = package_data() / "maven"
    pom = (maven / "pom-4.xml.in").read_text()
    assert "log4j-slf4j-impl" in pom
    assert "reload4j" not in pom
    assert sorted(p.name for p in (maven / "config-4").iterdir()) == [
        "log4j2.yaml",
        "server.properties",
        "tools-log4j2.yaml",
    ]


def test_releases_before_4_assemble_as_3x_and_the_rest_as_4x() -> None:
    assert kafka_line("2.8.2") == kafka_line("3.9.2") != kafka_line("4.0.0") == kafka_line("5.0.0")


# --- the real thing ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def assembled() -> Path:
    """The 4.x assembly in the real cache (assembled from Maven Central if missing). From
    the host's namespace: in a whole `make test` run the main thread has joined a test lab's
    network by now, which has no way out (the fresh-clone run with an empty cache failed so)."""
    return host_side.on_host(lambda: resolve_kafka(VERSION, progress=print))


@pytest.mark.slow
def test_every_launcher_the_labs_use_resolves_to_a_class_in_the_jars(assembled: Path) -> None:
    scripts: dict[str, str] = {}
    jars: list[bytes] = []
    names: set[str] = set()
    with tarfile.open(assembled) as tar:
        for member in tar:
            names.add(member.name)
            data = tar.extractfile(member) if member.isfile() else None
            if data is None:
                continue
            if member.name.startswith(f"{TOP}/bin/"):
                scripts[member.name.rsplit("/", 1)[1]] = data.read().decode()
            elif member.name.startswith(f"{TOP}/libs/") and member.name.endswith(".jar"):
                jars.append(data.read())
    classes = kafka_artifact._classes_in(jars)
    assert set(scripts) >= USED
    assert kafka_artifact.verify_launchers(assembled) == []
    for name in USED - {"kafka-run-class.sh"}:
        main_class = kafka_artifact._RUN_CLASS_CALL.search(scripts[name])
        stop = "pgrep" in scripts[name]
        assert main_class or stop, name
        wanted = main_class.group(1) if main_class else "kafka.Kafka"
        assert wanted in classes, f"{name}: {wanted}"
    # every launcher of tools.toml is there, but for the ZooKeeper ones 4.0 removed
    left_out = {launcher.name for launcher in launcher_table()} - set(scripts)
    assert left_out == {
        "zookeeper-server-start.sh",
        "zookeeper-server-stop.sh",
        "zookeeper-shell.sh",
    }
    assert not any("org.apache.zookeeper" in c for c in classes)
    assert "org.apache.logging.slf4j.Log4jLoggerFactory" in classes  # the slf4j 1.x binding
    assert f"{TOP}/config/log4j2.yaml" in names
    assert f"{TOP}/config/log4j.properties" not in names


@pytest.mark.slow
def test_the_4x_tools_run_and_log_through_log4j2(assembled: Path, tmp_path: Path) -> None:
    with tarfile.open(assembled) as tar:
        tar.extractall(tmp_path, filter="tar")
    bin_dir = tmp_path / TOP / "bin"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "LOG_DIR": str(tmp_path / "logs")},
        )

    assert len(run("kafka-storage.sh", "random-uuid").stdout.strip()) == 22
    version = run("kafka-topics.sh", "--version")
    assert VERSION in version.stdout
    # no "SLF4J: No SLF4J providers" / "Failed to load class": the binding is in libs/
    assert "SLF4J" not in version.stderr
    assert "StatusLogger" not in version.stderr  # log4j2 found and read tools-log4j2.yaml
