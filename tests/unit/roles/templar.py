"""Ansible's own templar with what a role sees on a host: the role's defaults and vars and
the inventory kafkalab generates (kafkalab.inventory) for a default cluster. The role tests
render their templates with it."""

from __future__ import annotations

from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from kafkalab import inventory, topology
from kafkalab.paths import repo_root

ROLES = repo_root() / "ansible" / "roles"
init_plugin_loader()  # filters and lookups (env, file) as ansible-playbook has them


def _trusted(value: Any) -> Any:
    """Role defaults and vars are trusted templates in Ansible; mark them so here too."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def host_context(
    role: str,
    host: str,
    extra_hosts: list[str],
    lab: dict[str, Any] | None = None,
    **overrides: Any,
) -> Templar:
    """A templar with what Ansible would see for `host`: the role's defaults and vars, the
    inventory kafkalab generates for a default lab with these extra hosts (and the topology
    settings in `lab`, e.g. mode), `overrides`."""
    topo = topology.load(overrides={"extra_hosts": extra_hosts, **(lab or {})})
    data = inventory.build(topo, {"ansible_user": "vagrant"}, None)
    hosts = inventory.hosts(data)
    loader = DataLoader()
    variables: dict[str, Any] = {}
    for part in ("defaults", "vars"):
        variables.update(_trusted(yaml.safe_load((ROLES / role / part / "main.yml").read_text())))
    groups: dict[str, list[str]] = {"all": list(hosts)}
    for name, hv in hosts.items():
        for g in hv["groups"]:
            groups.setdefault(g, []).append(name)
    hostvars = {name: {k: v for k, v in hv.items() if k != "groups"} for name, hv in hosts.items()}
    variables.update(data["all"]["vars"])
    variables.update(hostvars[host])
    variables.update(
        groups=groups,
        hostvars=hostvars,
        inventory_hostname=host,
        group_names=hosts[host]["groups"],
        ansible_managed="Ansible managed",
    )
    variables.update(overrides)
    return Templar(loader=loader, variables=variables)


def render(
    role: str,
    template: str,
    host: str,
    extra_hosts: list[str],
    lab: dict[str, Any] | None = None,
    **overrides: Any,
) -> str:
    templar = host_context(role, host, extra_hosts, lab, **overrides)
    text = (ROLES / role / "templates" / template).read_text()
    return str(templar.template(trust_as_template(text)))


def properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out
