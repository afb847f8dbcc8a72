#!/usr/bin/env bash
# Installs what building and testing Capstan needs on a fresh machine:
# the wasm32-wasip2 Rust target (guest components are built for it).
# Safe to run again; it skips what is already there.
set -euo pipefail

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "setup: installing the wasm32-wasip2 Rust target"
    rustup target add wasm32-wasip2
fi

# The qBittorrent end-to-end suite runs a real qbittorrent-nox (Debian
# package) against a throwaway profile; it fails rather than skips without it.
if ! command -v qbittorrent-nox >/dev/null 2>&1; then
    echo "setup: installing qbittorrent-nox (Debian package qbittorrent-nox)"
    if [ "$(id -u)" = 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "setup: qbittorrent-nox is missing and neither root nor sudo is available;" >&2
        echo "setup: install it with: apt-get install qbittorrent-nox" >&2
        exit 1
    fi
    apt_install() {
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends qbittorrent-nox >/dev/null
    }
    # A fresh machine's package lists may be empty or stale: refresh and retry.
    if ! apt_install; then
        "${as_root[@]}" apt-get update -qq
        apt_install
    fi
fi
