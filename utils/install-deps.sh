#!/usr/bin/env bash
# Installs the Debian packages dsc builds and tests with, when missing.
# Safe to run again: it installs nothing when everything is present.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3
  llvm-14-dev llvm-14-tools      # Support library, FileCheck, lit, split-file
  rapidjson-dev                  # JSON with positions
  libgraphviz-dev                # cgraph + gvc for dsc dot
  libonnx-dev libprotobuf-dev protobuf-compiler  # ONNX import
  libgtest-dev                   # unit tests
  libopenmpi-dev openmpi-bin     # dsrun's MPI rendezvous and its test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
