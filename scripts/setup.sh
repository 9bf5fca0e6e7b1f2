#!/usr/bin/env bash
# setup.sh: install the Debian packages the build and the tests need, only those missing.
# Idempotent: on a machine that has them all it does nothing and prints one line.
set -euo pipefail

# munge and slurm-*: the tuner's Slurm tests start a single-node cluster of their own
# (tests/tuner/slurm_lib.sh).
packages=(build-essential cmake git pkg-config libyaml-dev libcjson-dev libgsl-dev gnuplot-nox nodejs npm python3 python3-numpy
          clang libomp-dev munge slurm-wlm slurmctld slurmd slurm-client)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        # nodejs/npm may come from elsewhere than Debian (e.g. a preinstalled node): accept those.
        if { [ "$p" = nodejs ] && command -v node >/dev/null; } || { [ "$p" = npm ] && command -v npm >/dev/null; }; then
            continue
        fi
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all packages present"
    exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
