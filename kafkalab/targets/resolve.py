"""Which cluster a command talks to: the inventory given with `-i/--inventory` (or in
KAFKALAB_INVENTORY, as a lab's scripts get it); else the Vagrant lab that is up in this
folder (its generated inventory); else the embedded cluster (`KAFKALAB_STATE`, when set,
names the embedded cluster: no Vagrant lab is looked for).
"""

from __future__ import annotations

import os
from pathlib import Path

from kafkalab.targets import vagrant
from kafkalab.targets.cluster import InventoryCluster, VagrantCluster, is_vagrant_inventory
from kafkalab.targets.embedded import EmbeddedCluster


def cluster(inventory: Path | None = None, cwd: Path | None = None) -> InventoryCluster:
    """The cluster of `inventory`, of the Vagrant lab up in `cwd`, or the embedded one. An
    inventory that is missing or unreadable is refused here, with one line."""
    if inventory is None and os.environ.get("KAFKALAB_INVENTORY"):
        inventory = Path(os.environ["KAFKALAB_INVENTORY"])
    if inventory is not None:
        path = inventory.expanduser().absolute()
        chosen = VagrantCluster(path) if is_vagrant_inventory(path) else InventoryCluster(path)
        chosen.hosts()  # read now: a bad inventory is one line before anything runs
        return chosen
    if not os.environ.get("KAFKALAB_STATE"):
        found = vagrant.running_inventory(cwd or Path.cwd())
        if found is not None:
            return VagrantCluster(found)
    return EmbeddedCluster()
