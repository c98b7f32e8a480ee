"""Targets: where a cluster runs and how kafkalab reaches its machines.

The embedded target (`embedded.EmbeddedCluster`) boots nspawn machines (`machines`,
`boot`, `rootfs`) from the base image (`image`) in a network namespace of its own
(`netns`), reaches them over ssh (`ssh`), keeps its state in a directory (`statedir`) and
provisions them with Ansible (`provision`). The Vagrant target (`vagrant`, `box`) runs the
same topology as VMs from the root Vagrantfile.
"""
