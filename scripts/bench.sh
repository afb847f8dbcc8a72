#!/usr/bin/env bash
# Runs the benchmarks (release build), with a throwaway PostgreSQL for the
# durable-core figures. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# --tests: the languages benchmark builds the Python and JavaScript
# examples with the toolchains the test set-up installs.
scripts/setup.sh --tests
# The HTTP benchmark's load generator runs in a process of its own: wrk,
# from Debian's packages.
if ! command -v wrk >/dev/null 2>&1; then
    echo "bench: installing wrk"
    as_root=()
    [ "$(id -u)" = 0 ] || as_root=(sudo)
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null ||
        { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
fi
source scripts/postgres.sh
start_throwaway_postgres
trap stop_throwaway_postgres EXIT
cargo bench -p capstan-tests --bench runtime
cargo bench -p capstan-tests --bench durable
cargo bench -p capstan-tests --bench http
cargo bench -p capstan-tests --bench agent
cargo bench -p capstan-tests --bench memory
cargo bench -p capstan-tests --bench languages
# The scale-out benchmark runs the release binary as its workers.
cargo build --release -p capstan
cargo bench -p capstan-tests --bench scaleout
