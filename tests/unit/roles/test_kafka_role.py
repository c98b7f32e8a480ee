"""The kafka role's listeners and its kafka-python step, rendered by Ansible's own templar
against the inventory kafkalab generates (the live check: tests/cluster/test_course.py)."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.template import trust_as_template

from kafkalab.artifacts import kafka_python
from tests.unit.roles.templar import ROLES, host_context, properties, render

SERVER = "etc/kafka/server.properties.j2"


def server(host: str, lab: dict[str, Any] | None = None, **overrides: Any) -> dict[str, str]:
    return properties(render("kafka", SERVER, host, [], lab, **overrides))


@pytest.mark.parametrize(
    ("lab", "controller"),
    [({"mode": "kraft"}, ",CONTROLLER://10.77.0.12:9093"), ({"mode": "zookeeper"}, "")],
)
def test_brokers_bind_every_address_and_advertise_the_lab_address(lab, controller):
    props = server("kafka2", lab)
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:9092" + controller
    assert props["advertised.listeners"] == "PLAINTEXT://10.77.0.12:9092"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"


@pytest.mark.parametrize(
    ("lab", "controller"),
    [({"mode": "kraft"}, ",CONTROLLER://10.77.0.12:9093"), ({"mode": "zookeeper"}, "")],
)
def test_without_localhost_brokers_listen_on_the_lab_address_only(lab, controller):
    props = server("kafka2", lab, kafka_broker_localhost=False)
    assert props["listeners"] == "PLAINTEXT://10.77.0.12:9092" + controller
    assert props["advertised.listeners"] == "PLAINTEXT://10.77.0.12:9092"


HOST_LISTENER = {
    "kafka_host_listener_port": 29092,
    "kafka_host_listener_advertised": "localhost:9093",
}


@pytest.mark.parametrize(
    ("lab", "controller", "protocols"),
    [
        ({"mode": "kraft"}, ",CONTROLLER://10.77.0.12:9093", "CONTROLLER:PLAINTEXT,"),
        ({"mode": "zookeeper"}, "", ""),
    ],
)
def test_the_host_listener_binds_the_lab_address_and_advertises_localhost(
    lab, controller, protocols
):
    props = server("kafka2", lab, **HOST_LISTENER)
    assert props["listeners"] == (
        "PLAINTEXT://0.0.0.0:9092,PLAINTEXT_HOST://10.77.0.12:29092" + controller
    )
    assert props["advertised.listeners"] == (
        "PLAINTEXT://10.77.0.12:9092,PLAINTEXT_HOST://localhost:9093"
    )
    assert props["listener.security.protocol.map"] == (
        protocols + "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"
    )
    assert props["inter.broker.listener.name"] == "PLAINTEXT"  # brokers talk on the lab address


@pytest.mark.parametrize("lab", [{"mode": "kraft"}, {"mode": "zookeeper"}])
def test_without_the_host_listener_there_is_no_plaintext_host(lab):
    text = render("kafka", SERVER, "kafka2", [], lab)
    assert "PLAINTEXT_HOST" not in text


def test_dedicated_controllers_get_no_host_listener():
    ctrl = server("controller1", {"mode": "kraft", "controllers": 3}, **HOST_LISTENER)
    assert ctrl["listeners"] == "CONTROLLER://10.77.0.31:9093"
    assert ctrl["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"


def test_the_port_setting_moves_the_bound_listener_too():
    props = server("kafka1", None, kafka_broker_port=19092)
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:19092,CONTROLLER://10.77.0.11:9093"
    assert props["advertised.listeners"] == "PLAINTEXT://10.77.0.11:19092"


def test_dedicated_controllers_keep_to_their_lab_address():
    lab = {"mode": "kraft", "controllers": 3}
    ctrl = server("controller1", lab)
    assert ctrl["listeners"] == "CONTROLLER://10.77.0.31:9093"
    assert "advertised.listeners" not in ctrl
    broker = server("kafka1", lab)
    assert broker["listeners"] == "PLAINTEXT://0.0.0.0:9092"
    assert broker["advertised.listeners"] == "PLAINTEXT://10.77.0.11:9092"


def test_no_blank_line_left_where_the_listener_choice_is_made():
    text = render("kafka", SERVER, "kafka1", [])
    head = text.split("############################# Node", 1)[0]
    assert "\n\n\n" not in head


def test_the_wheel_unpacks_to_its_versions_dist_info():
    wheel = kafka_python.wheel_path(Path("/cache"))
    templar = host_context("kafka", "kafka1", [], kafka_python_wheel=str(wheel))
    got = templar.template(trust_as_template("{{ _kafka_python_dist_info }}"))
    assert got == f"kafka_python-{kafka_python.VERSION}.dist-info"


def test_the_wheel_step_runs_only_with_a_wheel():
    tasks = yaml.safe_load((ROLES / "kafka" / "tasks" / "install.yml").read_text())
    step = next(t for t in tasks if t.get("ansible.builtin.import_tasks") == "kafka_python.yml")
    assert step["when"] == "kafka_python_wheel | length > 0"


def make_wheel(path: Path, version: str) -> Path:
    wheel = path / f"kafka_python-{version}-py2.py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("kafka/__init__.py", f"__version__ = {version!r}\n")
        zf.writestr(f"kafka_python-{version}.dist-info/RECORD", "kafka/__init__.py,,\n")
    return wheel


def test_the_wheel_script_installs_once_and_replaces_other_versions(tmp_path):
    """files/install_wheel.py, as the role runs it, with a venv's python3 (its own purelib):
    the first run unpacks and compiles and says so, the second changes nothing and says
    nothing (the task's changed_when), a new version replaces the old dist-info and kafka/."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv"], check=True)
    python = str(tmp_path / "venv" / "bin" / "python3")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    script = (ROLES / "kafka" / "files" / "install_wheel.py").read_text()
    steps = yaml.safe_load((ROLES / "kafka" / "tasks" / "kafka_python.yml").read_text())
    unpack = next(t for t in steps if t["name"].startswith("Unpack kafka-python"))
    assert "install_wheel.py" in unpack["ansible.builtin.command"]["argv"][2]

    def install(version: str) -> str:
        wheel = make_wheel(tmp_path, version)
        argv = [python, "-c", script, str(wheel), f"kafka_python-{version}.dist-info"]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    assert install("2.0.0") == f"installed {site}\n"
    assert list((site / "kafka" / "__pycache__").glob("__init__.*.pyc"))  # compiled
    assert install("2.0.0") == ""  # its RECORD is there: nothing to do
    stale = site / "kafka" / "stale.py"
    stale.write_text("")
    assert install("2.2.15").startswith("installed ")
    assert not (site / "kafka_python-2.0.0.dist-info").exists() and not stale.exists()
    assert (site / "kafka" / "__init__.py").read_text() == "__version__ = '2.2.15'\n"


def test_the_cluster_id_is_kafkas_uuid_format_without_a_jvm():
    """The generated cluster id has the shape of Kafka's Uuid.randomUuid(): 16 random bytes,
    URL-safe base64 without padding (22 characters), never starting with "-"."""
    tasks = yaml.safe_load((ROLES / "kafka" / "tasks" / "storage.yml").read_text())
    step = next(t for t in tasks if t["name"] == "Generate a cluster id")
    argv = step["ansible.builtin.command"]["argv"]
    assert "kafka-storage" not in " ".join(argv)
    script = argv[-1]
    ids = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(3)
    ]
    assert len(set(ids)) == 3
    for uid in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", uid) and not uid.startswith("-"), uid
        assert len(base64.urlsafe_b64decode(uid + "==")) == 16
