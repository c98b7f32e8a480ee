"""Mitogen's linear strategy without its CPU pinning (kafkalab.targets.provision picks it).

Mitogen pins Ansible's processes to CPUs (ansible_mitogen.affinity): on a machine with 2 or 3
CPUs its connection multiplexer gets CPU 0, and the top-level process, every task's worker
and the ssh clients all share CPU 1. kafkalab runs its embedded machines on the same CPUs, so
the controller queued behind the brokers on one core while the other had time to spare. With
the pinning off, a changed=0 `kafkalab up` of three brokers took about a third less time
(bench/ansible_speed.py prints both). Everything else is Mitogen's `mitogen_linear`.
"""

from __future__ import annotations

import ansible_mitogen.affinity  # type: ignore[import-untyped]
import ansible_mitogen.loaders  # type: ignore[import-untyped]
import ansible_mitogen.strategy  # type: ignore[import-untyped]

DOCUMENTATION = """
name: kafkalab_linear
short_description: Mitogen's linear strategy, without pinning Ansible's processes to CPUs
description:
  - Mitogen's mitogen_linear strategy, with ansible_mitogen.affinity's policy replaced by its
    no-op base policy, so the scheduler places the controller, its workers and ssh freely.
"""

# The base policy's assign_* methods do nothing; every caller looks the policy up here.
ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):  # type: ignore[misc,valid-type]
    pass
