#!/usr/bin/env bash
# Installs what building and testing Capstan needs on a fresh machine:
# the wasm32-wasip2 Rust target (guest components are built for it).
# Safe to run again; it skips what is already there.
set -euo pipefail

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "setup: installing the wasm32-wasip2 Rust target"
    rustup target add wasm32-wasip2
fi
