from kafkalab import inventory, topology


def _inv(**overrides):
    topo = topology.load(overrides=overrides)
    return inventory.build(topo, {"ansible_user": "vagrant"}, None)


def test_kraft_inventory_has_brokers_with_ids_and_no_zookeeper():
    data = _inv()
    children = data["all"]["children"]
    assert set(children) == {"kafka_broker"}
    hosts = children["kafka_broker"]["hosts"]
    assert hosts["kafka2"] == {
        "ansible_host": "10.77.0.12",
        "kafkalab_address": "10.77.0.12",
        "kafka_node_id": 2,
    }
    assert data["all"]["vars"]["kafka_mode"] == "kraft"
    assert data["all"]["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"


def test_zookeeper_inventory_numbers_the_ensemble():
    data = _inv(mode="zookeeper")
    zk = data["all"]["children"]["zookeeper"]["hosts"]
    assert [hv["zookeeper_myid"] for hv in zk.values()] == [1, 2, 3]
    merged = inventory.hosts(data)
    assert merged["kafka1"]["groups"] == ["kafka_broker", "zookeeper"]


def test_dedicated_controllers_group():
    data = _inv(controllers=3)
    ctl = data["all"]["children"]["kafka_controller"]["hosts"]
    assert list(ctl) == ["controller1", "controller2", "controller3"]


def test_address_of_overrides_how_ansible_connects_only():
    topo = topology.load()
    data = inventory.build(topo, {}, None, address_of={"kafka1": "127.0.0.1"})
    hv = data["all"]["children"]["kafka_broker"]["hosts"]["kafka1"]
    assert hv["ansible_host"] == "127.0.0.1"
    assert hv["kafkalab_address"] == "10.77.0.11"


def test_write_is_stable(tmp_path):
    path = tmp_path / "hosts.yml"
    data = _inv()
    inventory.write(data, path)
    first = path.stat().st_mtime_ns
    inventory.write(data, path)
    assert path.stat().st_mtime_ns == first
    assert inventory.load(path) == data


def test_extra_hosts_get_cp_ansible_groups():
    data = _inv(extra_hosts=["spark", "ksqldb"])
    children = data["all"]["children"]
    assert list(children["spark_master"]["hosts"]) == ["spark1"]
    assert list(children["spark_worker"]["hosts"]) == ["spark1"]
    assert list(children["ksqldb"]["hosts"]) == ["ksql1"]
    assert children["ksqldb"]["hosts"]["ksql1"]["kafkalab_address"] == "10.77.0.22"


def test_the_host_listener_is_the_embedded_labs_only():
    topo = topology.load(overrides={"mode": "zookeeper", "host_kafka_port": 19092})
    plain = inventory.build(topo, {}, None)
    assert "kafka_host_listener_port" not in plain["all"]["vars"]
    assert not any("kafka_host_listener_advertised" in hv for hv in inventory.hosts(plain).values())
    data = inventory.build(topo, {}, None, host_listener=True)
    assert data["all"]["vars"]["kafka_host_listener_port"] == topology.HOST_LISTENER_PORT
    merged = inventory.hosts(data)
    advertised = {h: hv["kafka_host_listener_advertised"] for h, hv in merged.items()}
    assert advertised == {
        "kafka1": "localhost:19092",
        "kafka2": "localhost:19093",
        "kafka3": "localhost:19094",
    }
