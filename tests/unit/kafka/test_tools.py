"""The JVM settings kafkalab gives the Kafka tools it runs on a machine (kafka.tools)."""

from __future__ import annotations

import subprocess

from kafkalab.kafka.tools import JVM_EXPORT, QUICK_JVM


def exported(env: dict[str, str]) -> str:
    script = JVM_EXPORT + 'printf %s "$KAFKA_JVM_PERFORMANCE_OPTS"'
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout


def test_the_tools_get_the_release_class_archive_when_the_machine_has_it(tmp_path):
    archive = tmp_path / "kafkalab-tools.jsa"
    archive.write_bytes(b"")
    opts = exported({"KAFKA_HOME": str(tmp_path)})
    assert opts.startswith(QUICK_JVM)
    assert f"-XX:SharedArchiveFile={archive}" in opts.split()


def test_no_archive_named_where_there_is_none(tmp_path):
    """A JVM told of a missing archive runs without any CDS, not even the JDK's own."""
    assert exported({"KAFKA_HOME": str(tmp_path)}) == QUICK_JVM
    assert exported({}) == QUICK_JVM
