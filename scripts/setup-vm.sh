#!/usr/bin/env bash
# What the VM tier (tests/vm, bench/vm_cluster.py) and `kafkalab box build` need on a
# Debian machine, from Debian packages only: Vagrant with its libvirt provider, libvirt,
# QEMU, and the tools that lay the box's disk. Idempotent; run after scripts/setup.sh.
#
# The project runs libvirtd and virtlogd itself, inside its own network namespace
# (kafkalab/targets/vagrant.py: `klvm`, no uplink, no NAT, no default route). So this script
# makes sure no libvirt daemon starts on its own in the root namespace: services are not
# started during the install, libvirt's `default` NAT network does not autostart, and on
# a systemd host libvirt's units are disabled. (A trainer who wants the usual libvirt
# service follows docs/VMS.md instead of running this script.)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(vagrant vagrant-libvirt libvirt-daemon-system libvirt-daemon-driver-qemu
  qemu-system-x86 qemu-utils dnsmasq-base mmdebstrap e2fsprogs fdisk iproute2 ruby)

# shellcheck source=lib/common.sh
. scripts/lib/common.sh

need_root "run with sudo (apt-get, network namespaces, libvirtd)"
apt_install --no-start "${APT_PACKAGES[@]}"

# libvirt's `default` network is a NAT to the outside: never start it by itself.
rm -f /etc/libvirt/qemu/networks/autostart/default.xml
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
  say "disabling libvirt's systemd units (kafkalab starts libvirtd in its namespace)"
  systemctl disable --now libvirtd.service libvirtd.socket libvirtd-ro.socket \
    libvirtd-admin.socket virtlogd.service virtlogd.socket virtlogd-admin.socket 2>/dev/null || true
fi

# /dev/kvm as Debian's udev rule leaves it: group kvm (the group libvirt runs QEMU with), read
# and write. Without udev (a container) it stays root's alone; libvirt then finds KVM enabled
# when it probes QEMU but not usable when it checks that probe's cache, so it probes QEMU
# again on every call that needs the capabilities (4 s each idle, 64 s for the first one;
# `vagrant up` spent over 2 minutes in them before the VM even started: libvirtd's debug log
# said "KVM was enabled when probing '/usr/bin/qemu-system-x86_64', but it is not available
# now" each time). The VMs still run under TCG where KVM cannot run them (KAFKALAB_VM_DRIVER).
if [ -c /dev/kvm ] && getent group kvm >/dev/null && [ "$(stat -c %G /dev/kvm)" != kvm ]; then
  say "giving /dev/kvm to group kvm, as udev does (libvirt kept probing QEMU again)"
  chgrp kvm /dev/kvm
  chmod g+rw /dev/kvm
fi

# The VM tier drives Vagrant from Python (python-vagrant, a dev dependency).
if [ -x .venv/bin/python ] && ! .venv/bin/python -c 'import vagrant' 2>/dev/null; then
  say "installing python-vagrant into .venv"
  .venv/bin/pip install -q 'python-vagrant>=1.0'
fi

# The box is an artifact like the others: built here, from Debian packages, outside any
# lab network (the VM tier itself downloads nothing). Cached by its recipes' hash.
if [ -x .venv/bin/kafkalab ]; then
  say "building the kafkalab box (cached after the first time, a few minutes)"
  .venv/bin/kafkalab box build
fi

say "ready: make test-vm runs the VM tier (docs/VMS.md)"
