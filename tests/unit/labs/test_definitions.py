"""Lab definitions: every shipped lab loads; a bad lab.yml gives one clear line; the
cluster a lab needs is checked before anything runs. No cluster needed (seconds)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafkalab import inventory
from kafkalab.errors import KafkalabError
from kafkalab.labs import catalog, runner
from kafkalab.labs.definition import Lab
from kafkalab.labs.progress import Progress
from kafkalab.targets.cluster import InventoryCluster, VagrantCluster
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.topology import SUPPORTED_KAFKA_VERSIONS, Topology, release

GOOD = {
    "title": "Tiny",
    "goal": "a topic",
    "needs": {"brokers": 1},
    "setup": {"topics": [{"name": "tiny"}], "records": [{"topic": "tiny", "count": 2}]},
    "steps": [{"title": "list", "run": "kafka-topics.sh --bootstrap-server kafka1:9092 --list"}],
    "checks": [{"kind": "topic", "topic": "tiny"}],
}


def make_lab(
    root: Path, definition: dict | str, name: str = "07-tiny", readme: bool = True
) -> Path:
    path = root / name
    path.mkdir(parents=True)
    text = definition if isinstance(definition, str) else yaml.safe_dump(definition)
    (path / "lab.yml").write_text(text)
    if readme:
        (path / "README.md").write_text("# Tiny\n")
    return path


def changed(**updates) -> dict:
    data = json.loads(json.dumps(GOOD))
    for key, value in updates.items():
        data[key] = value
    return data


def test_shipped_labs_load():
    found = catalog.discover()
    bad = [x for x in found if isinstance(x, KafkalabError)]
    assert not bad, bad
    ids = [x.id for x in found if isinstance(x, Lab)]
    assert ids[:6] == ["01", "02", "03", "04", "05", "06"]
    assert ids == sorted(set(ids))
    for lab in found:
        assert isinstance(lab, Lab)
        assert lab.readme.read_text().startswith(f"# Lab {lab.id}")
        assert "## Check" in lab.readme.read_text()
        assert f"lab check {lab.id}" in lab.readme.read_text()


def test_find_by_number_or_name():
    assert catalog.find("3").slug == "03-consumer-groups"
    assert catalog.find("03").slug == "03-consumer-groups"
    assert catalog.find("consumer-groups").slug == "03-consumer-groups"
    assert catalog.find("labs/03-consumer-groups/").slug == "03-consumer-groups"
    with pytest.raises(KafkalabError, match=r"no lab '99'; labs: 01 \(first-topic\)"):
        catalog.find("99")


def test_a_good_tiny_lab(tmp_path):
    lab = catalog.load(make_lab(tmp_path, GOOD))
    assert (lab.id, lab.title, lab.topics()) == ("07", "Tiny", ["tiny"])
    assert lab.spec.needs.modes == ["kraft", "zookeeper"]


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("title: [unclosed", "07-tiny/lab.yml: not valid YAML"),
        ("- a list", "expected a mapping"),
        (changed(colour="blue"), "07-tiny/lab.yml: colour: unknown setting"),
        (changed(needs={"modes": ["kraftt"]}), "needs.modes[0]: Input should be 'kraft' or"),
        (changed(needs={"brokers": 0}), "needs.brokers: Input should be greater than or equal"),
        (changed(steps=[]), "steps: List should have at least 1 item"),
        (changed(checks=[{"kind": "nope"}]), "checks[0]: unknown check kind 'nope'; kinds:"),
        (changed(checks=[{"kind": "topic"}]), "checks[0] (topic): topic: Field required"),
        (
            changed(checks=[{"kind": "topic", "topic": "t", "partitons": 3}]),
            "checks[0] (topic): partitons: unknown setting",
        ),
        (
            changed(setup={"voters": "some"}),
            "setup.voters: Input should be 'all'",
        ),
        (
            changed(checks=[{"kind": "quorum_voters", "voters": []}]),
            "checks[0] (quorum_voters): voters: List should have at least 1 item",
        ),
        (
            changed(checks=[{"kind": "share_group_done", "group": "g"}]),
            "checks[0] (share_group_done): topic: Field required",
        ),
        (
            changed(checks=[{"kind": "group_type", "group": "g", "type": "share"}]),
            "checks[0] (group_type): type: Input should be 'consumer' or 'classic'",
        ),
        (
            changed(steps=[{"title": "two", "run": "true", "sleep": 3}]),
            "steps[0]: a step does exactly one of run, python, kafkalab, wait, stop, sleep, "
            "until (got run, sleep)",
        ),
        (changed(steps=[{"title": "none"}]), "(got none)"),
        (
            changed(steps=[{"title": "w", "wait": "producer"}]),
            "waits for 'producer', which no earlier step started in the background",
        ),
        (
            changed(steps=[{"title": "p", "python": "missing.py --x"}]),
            "python script missing.py is not in 07-tiny/",
        ),
        (
            changed(steps=[{"title": "x", "run": "true", "machine": "{{ who_knows }}"}]),
            "unknown placeholder",
        ),
        (
            changed(steps=[{"title": "x", "run": "true", "machine": "kafka3"}]),
            "kafka3 is not there when the lab needs only 1 broker(s)",
        ),
        (
            changed(setup={"topics": [{"name": "t", "replication_factor": 3}]}),
            "replication factor 3 needs needs.brokers: 3 or more (it says 1)",
        ),
        (
            changed(setup={"topics": [{"name": "t", "partitions": 2, "replicas": [[1]]}]}),
            "replicas lists 1 partitions, partitions is 2",
        ),
        (
            changed(setup={"records": [{"topic": "elsewhere", "count": 1}]}),
            "records go to topic 'elsewhere', which setup does not create",
        ),
        (
            changed(
                setup={
                    "topics": [{"name": "t"}],
                    "records": [{"topic": "t", "count": 1, "value": "{n}"}],
                }
            ),
            "only {i} may be used",
        ),
        (changed(env={"b-var": "x"}), "'b-var' is not a shell variable name"),
        (
            changed(steps=[{"title": "x", "run": "true", "machine": "spark1"}]),
            "spark1 runs on a lab only with needs.extra_hosts: [spark]",
        ),
        (
            changed(steps=[{"title": "x", "run": "true", "machine": "db1"}]),
            "unknown machine 'db1'",
        ),
    ],
)
def test_bad_definition_is_one_clear_line(tmp_path, definition, expected):
    with pytest.raises(KafkalabError) as err:
        catalog.load(make_lab(tmp_path, definition))
    message = str(err.value)
    assert expected in message
    assert "\n" not in message
    assert message.startswith("07-tiny")


def test_folder_name_and_readme_are_required(tmp_path):
    with pytest.raises(KafkalabError, match="a lab folder is named NN-name"):
        catalog.load(make_lab(tmp_path, GOOD, name="tiny"))
    with pytest.raises(KafkalabError, match=r"no README\.md for the learner"):
        catalog.load(make_lab(tmp_path, GOOD, name="08-tiny", readme=False))


def test_a_broken_lab_does_not_hide_the_others(tmp_path):
    make_lab(tmp_path, GOOD, name="01-good")
    make_lab(tmp_path, "title: [", name="02-broken")
    found = catalog.discover(tmp_path)
    assert isinstance(found[0], Lab)
    assert isinstance(found[1], KafkalabError)
    assert catalog.find("01", tmp_path).title == "Tiny"


def _broken(path: Path) -> None:
    (path / "lab.yml").unlink()
    (path / "lab.yml").mkdir()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"title: caf\xe9\n", "07-tiny/lab.yml: not UTF-8 text (byte 0xe9 at offset 10)"),
        (_broken, "07-tiny/lab.yml: is a directory"),
        (b"[" * 5000, "07-tiny/lab.yml: not valid YAML: nested too deeply"),
        (yaml.safe_dump({1: "x", **GOOD}).encode(), "07-tiny/lab.yml: [1]: Keys should be"),
        (
            yaml.safe_dump(changed(steps=[{"title": "p", "python": "'where.py"}])).encode(),
            "steps[0] (p): python: No closing quotation",
        ),
        (
            yaml.safe_dump(changed(steps=[{"title": "p", "python": "  "}])).encode(),
            "steps[0] (p): python: names no script",
        ),
        (
            yaml.safe_dump(changed(needs={"brokers": True})).encode(),
            "needs.brokers: Input should be a valid integer (got True)",
        ),
    ],
)
def test_unreadable_definition_is_one_line_in_the_list(tmp_path, content, expected):
    """What used to end `kafkalab lab list` in a traceback: flagged, the others listed."""
    make_lab(tmp_path, GOOD, name="01-good")
    path = make_lab(tmp_path, GOOD)
    if callable(content):
        content(path)
    else:
        (path / "lab.yml").write_bytes(content)
    found = catalog.discover(tmp_path)
    assert isinstance(found[0], Lab)
    assert isinstance(found[1], KafkalabError)
    message = str(found[1])
    assert expected in message and "\n" not in message
    with pytest.raises(KafkalabError, match=re.escape(expected)):
        catalog.find("07", tmp_path)


def test_an_unforeseen_failure_still_lists_the_others(tmp_path, monkeypatch):
    make_lab(tmp_path, GOOD, name="01-good")
    make_lab(tmp_path, GOOD, name="02-odd")
    real = catalog._cross_check

    def flaky(lab, source):
        if lab.id == "02":
            raise RuntimeError("a bug in a check")
        real(lab, source)

    monkeypatch.setattr(catalog, "_cross_check", flaky)
    found = catalog.discover(tmp_path)
    assert isinstance(found[0], Lab)
    assert str(found[1]) == "02-odd/lab.yml: cannot be loaded: RuntimeError('a bug in a check')"


def topo(**kw) -> Topology:
    return Topology(**kw)


def test_cluster_requirements_are_checked_first(tmp_path):
    lab04 = catalog.find("04")
    with pytest.raises(KafkalabError, match=r"no cluster here yet: run `kafkalab up` first"):
        runner.require(None, lab04)
    with pytest.raises(
        KafkalabError,
        match=r"replication factor 3 is larger than the number "
        r"of brokers \(1\)",
    ):
        runner.require(topo(brokers=1), lab04)
    kraft_only = catalog.load(make_lab(tmp_path, changed(needs={"modes": ["kraft"]})))
    with pytest.raises(
        KafkalabError,
        match=r"runs on a kraft cluster; this one is zookeeper.*`kafkalab up --mode kraft`",
    ):
        runner.require(topo(mode="zookeeper"), kraft_only)
    three = catalog.load(make_lab(tmp_path, changed(needs={"brokers": 3}), name="08-three"))
    with pytest.raises(
        KafkalabError, match="needs 3 brokers; this cluster has 2: run `kafkalab up --brokers 3`"
    ):
        runner.require(topo(brokers=2), three)
    spark = catalog.load(make_lab(tmp_path, changed(needs={"extra_hosts": ["spark"]}), "09-spark"))
    with pytest.raises(
        KafkalabError,
        match=r"needs the spark host\(s\) this cluster does not "
        r"have: run `kafkalab up --with spark`",
    ):
        runner.require(topo(), spark)
    assert runner.require(topo(extra_hosts=["spark"]), spark).extra_hosts == ["spark"]
    assert runner.require(topo(), lab04).brokers == 3


def kafkalab(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KAFKALAB_STATE=str(state), KAFKALAB_NETNS="kllabsunit", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True, env=env
    )


def test_cli_list_and_refusals(tmp_path):
    proc = kafkalab(tmp_path / "state", "lab", "list")
    assert proc.returncode == 0, proc.stderr
    assert "03" in proc.stdout and "Consumer groups" in proc.stdout
    assert proc.stdout.count("not started") == len(catalog.folders())
    proc = kafkalab(tmp_path / "state", "lab", "start", "04")
    assert proc.returncode == 2
    assert "no cluster here yet" in proc.stderr and "Traceback" not in proc.stderr
    state = tmp_path / "one-broker"
    state.mkdir()
    saved = {"netns": "kllabsunit", "topology": topo(brokers=1).model_dump()}
    (state / "lab.json").write_text(json.dumps(saved))
    # labs read the cluster from its inventory, which `up` writes with lab.json
    inventory.write(inventory.build(topo(brokers=1), {}, None), state / "inventory" / "hosts.yml")
    proc = kafkalab(state, "lab", "start", "05")
    assert proc.returncode == 2
    assert "replication factor 3 is larger than the number of brokers (1)" in proc.stderr
    proc = kafkalab(state, "lab", "check", "nine")
    assert proc.returncode == 2 and "no lab 'nine'" in proc.stderr
    assert not (state / "labs").exists()  # nothing ran


def test_progress_is_kept_per_lab(tmp_path):
    progress = Progress(tmp_path)
    lab = catalog.find("01")
    assert progress.state(lab) == "not started"
    progress.set(lab, "in progress", baseline={"x": 1})
    progress.set(lab, "passed")
    assert progress.state(lab) == "passed"
    assert progress.get(lab)["baseline"] == {"x": 1}
    assert progress.workdir(lab) == tmp_path / "labs" / "01-first-topic"


def test_cli_list_flags_a_broken_lab_and_lists_the_others(tmp_path):
    make_lab(tmp_path / "labs", GOOD, name="01-good")
    (make_lab(tmp_path / "labs", GOOD, name="02-broken") / "lab.yml").write_bytes(b"title: \xff\n")
    script = (
        "import sys; from pathlib import Path; from kafkalab.labs import catalog; "
        f"catalog.labs_root = lambda: Path({str(tmp_path / 'labs')!r}); "
        "sys.argv = ['kafkalab', 'lab', 'list']; from kafkalab.cli import main; main()"
    )
    env = dict(
        os.environ,
        KAFKALAB_STATE=str(tmp_path / "state"),
        KAFKALAB_NETNS="kllabsunit",
        COLUMNS="300",
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = [line for line in proc.stdout.splitlines() if "│" in line]
    assert len(rows) == 2
    assert "Tiny" in rows[0] and "not started" in rows[0]
    assert "02-broken/lab.yml: not UTF-8 text (byte 0xff at offset 7); save it as UTF-8" in rows[1]


def test_what_a_lab_lacks_is_said_for_the_target_in_use(tmp_path):
    """On your own hosts or Vagrant VMs `kafkalab up --with/--brokers` cannot help: the
    refusal says where the change goes instead."""
    spark = catalog.load(make_lab(tmp_path, changed(needs={"extra_hosts": ["spark"]}), "09-spark"))
    mine = InventoryCluster(tmp_path / "mine.yml")
    with pytest.raises(KafkalabError) as exc:
        runner.require(topo(), spark, mine)
    line = str(exc.value)
    assert f"add the spark host(s) to {tmp_path / 'mine.yml'}" in line
    assert f"`kafkalab up -i {tmp_path / 'mine.yml'}`" in line and "--with" not in line
    vms = VagrantCluster(tmp_path / ".vagrant" / "provisioners" / "ansible" / "inventory" / "x")
    with pytest.raises(KafkalabError, match=r"`vagrant up` in a lab folder .* needs 3 brokers"):
        runner.require(
            topo(brokers=2),
            catalog.load(make_lab(tmp_path, changed(needs={"brokers": 3}), name="08-three")),
            vms,
        )
    kraft_only = catalog.load(make_lab(tmp_path, changed(needs={"modes": ["kraft"]}), "07-k"))
    with pytest.raises(KafkalabError) as exc:
        runner.require(topo(mode="zookeeper"), kraft_only, mine)
    assert "down --purge" not in str(exc.value) and "kafka_mode" in str(exc.value)


def test_the_embedded_lab_keeps_its_own_way_out(tmp_path, monkeypatch):
    """The embedded cluster passed as the target is told what the embedded lab is told."""
    monkeypatch.setenv("KAFKALAB_NETNS", "klunitreq")
    lab = EmbeddedCluster(tmp_path / "state")
    kraft_only = catalog.load(make_lab(tmp_path, changed(needs={"modes": ["kraft"]}), "07-k"))
    with pytest.raises(KafkalabError, match=r"`kafkalab down --purge`, then `kafkalab up --mode"):
        runner.require(topo(mode="zookeeper"), kraft_only, lab)
    three = catalog.load(make_lab(tmp_path, changed(needs={"brokers": 3}), name="08-three"))
    with pytest.raises(KafkalabError, match=r"run `kafkalab up --brokers 3` after `kafkalab down"):
        runner.require(topo(brokers=2), three, lab)


def test_a_lab_for_a_newer_kafka_says_which_release_it_needs(tmp_path):
    """needs.kafka_min: a 4.x feature's lab refuses a 3.9 cluster in one line that names
    the release to set; it cannot also ask for ZooKeeper, which 4.x does not have."""
    new = catalog.load(
        make_lab(tmp_path, changed(needs={"modes": ["kraft"], "kafka_min": "4.0"}), "11-new")
    )
    with pytest.raises(KafkalabError) as exc:
        runner.require(topo(kafka_version="3.9.2"), new)
    line = str(exc.value)
    assert "needs Kafka 4.0 or newer; this cluster runs 3.9.2" in line
    assert f"kafka_version: {SUPPORTED_KAFKA_VERSIONS[-1]} in cluster.yml" in line
    assert runner.require(topo(kafka_version="4.3.1"), new).kafka_version == "4.3.1"
    mine = InventoryCluster(tmp_path / "mine.yml")
    with pytest.raises(KafkalabError, match=r"in the inventory and provision again"):
        runner.require(topo(kafka_version="3.9.2"), new, mine)
    with pytest.raises(KafkalabError, match=r"needs.kafka_min: Kafka 4.0 has no ZooKeeper mode"):
        catalog.load(make_lab(tmp_path, changed(needs={"kafka_min": "4.0"}), "12-zk"))
    assert release("4.0") < release("4.0.1") < release("4.3.1") and release("3.9.2") < (4,)


def test_the_share_group_table_is_read_per_partition():
    from kafkalab.labs.checks.topics import _share_offsets

    text = (
        "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG\n"
        "workers         jobs            0          18            0\n"
        "workers         jobs            1          4             7\n"
        "workers         other           0          2             0\n"
        "workers         jobs            2          -             -\n"
    )
    assert _share_offsets(text, "workers", "jobs") == {0: (18, 0), 1: (4, 7), 2: (-1, -1)}


def test_a_lab_that_starts_on_an_older_line_refuses_a_newer_cluster_to_start_on(tmp_path):
    """needs.kafka_max (lab 14, an upgrade from 3.9): start, reset and solve refuse a 4.x
    cluster in one line with the way back (new storage on 3.9.2); check looks at it."""
    old = catalog.load(
        make_lab(tmp_path, changed(needs={"modes": ["kraft"], "kafka_max": "3.9"}), "14-up")
    )
    with pytest.raises(KafkalabError) as exc:
        runner.require(topo(kafka_version="4.3.1"), old)
    line = str(exc.value)
    assert "starts on Kafka 3.9; this cluster runs 4.3.1" in line
    assert "`kafkalab down --purge`" in line and "`kafkalab up --kafka-version 3.9.2`" in line
    assert runner.require(topo(kafka_version="4.3.1"), old, starting=False)
    assert runner.require(topo(kafka_version="3.9.2"), old).kafka_version == "3.9.2"
    mine = InventoryCluster(tmp_path / "mine.yml")
    with pytest.raises(KafkalabError, match=r"kafka_version: 3.9.2 on new storage"):
        runner.require(topo(kafka_version="4.3.1"), old, mine)
    assert not runner.too_new("3.9.2", "3.9") and runner.too_new("4.0.0", "3.9")
    assert runner.too_new("3.9.2", "3.9.1") and not runner.too_new("3.9.0", "3")
    with pytest.raises(KafkalabError, match=r"needs.kafka_max: 3.9 is older than needs.kafka_min"):
        catalog.load(
            make_lab(
                tmp_path,
                changed(needs={"modes": ["kraft"], "kafka_min": "4.0", "kafka_max": "3.9"}),
                "15-x",
            )
        )


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ({"title": "x", "kafkalab": "down --purge"}, r"kafkalab: runs one of up, status"),
        ({"title": "x", "kafkalab": " "}, r"kafkalab: runs one of up"),
        ({"title": "x", "stop": "producer"}, r"waits for 'producer', which no earlier step"),
        ({"title": "x", "stop": "p", "run": "true"}, r"exactly one of run, python, kafkalab"),
        ({"title": "x", "run": "true", "remedy": True}, r"`remedy` runs the remedies an `until`"),
    ],
)
def test_host_and_stop_steps_are_checked_when_the_lab_loads(tmp_path, step, why):
    with pytest.raises(KafkalabError, match=why):
        catalog.load(make_lab(tmp_path, changed(steps=[step])))


def test_the_upgrade_checks_read_the_running_jar_and_the_features():
    from kafkalab.labs.checks.upgrade import FEATURE, SERVER_JAR

    assert SERVER_JAR.search("/opt/kafka_2.13-4.3.1/libs/kafka_2.13-4.3.1.jar").group(1) == "4.3.1"
    assert SERVER_JAR.search("/opt/x/libs/kafka-clients-4.3.1.jar") is None
    text = (
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 0\tEpoch: 185\n"
        "Feature: metadata.version    SupportedMinVersion: 3.3-IV3   SupportedMaxVersion: "
        "4.3-IV0   FinalizedVersionLevel: 3.9-IV0   Epoch: 185\n"
    )
    assert FEATURE.findall(text) == [
        ("kraft.version", "1", "0"),
        ("metadata.version", "4.3-IV0", "3.9-IV0"),
    ]
