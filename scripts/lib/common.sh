# Shared by scripts/setup.sh and scripts/setup-vm.sh (sourced, not run).

say() { printf '\033[1;36m•\033[0m %s\n' "$*"; }

# need_root WHY: exit 2 with WHY unless running as root.
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: $1" >&2
    exit 2
  fi
}

# apt_install [--no-start] PACKAGE...: install the Debian packages that are missing, and
# nothing else. --no-start keeps the packages' services from starting during the install
# (invoke-rc.d asks /usr/sbin/policy-rc.d first: exit 101 means "start nothing").
apt_install() {
  local no_start="" guard="" pkg rc=0
  if [ "${1:-}" = --no-start ]; then no_start=1; shift; fi
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  if [ -n "$no_start" ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    guard=1
  fi
  apt-get update -q || rc=$?
  if [ $rc -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
  fi
  [ -n "$guard" ] && rm -f /usr/sbin/policy-rc.d
  return $rc
}
