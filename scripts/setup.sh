#!/usr/bin/env bash
# Installs what the build and tests need on a fresh Debian machine:
# the wasm32-wasip1 Rust target, rustfmt/clippy, bats, jq, wasm-opt, and
# openssl, curl, xz and column for the real-cluster suite, and PyYAML for
# scripts/release-settings.sh.
set -euo pipefail

rustup target add wasm32-wasip1
rustup component add rustfmt clippy

missing=()
for tool in bats:bats jq:jq wasm-opt:binaryen openssl:openssl curl:curl xz:xz-utils column:bsdextrautils; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
