#!/usr/bin/env bash
# Runs the benchmarks (release build), with a throwaway PostgreSQL for the
# durable-core figures. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/postgres.sh
start_throwaway_postgres
trap stop_throwaway_postgres EXIT
cargo bench -p capstan-tests --bench runtime
cargo bench -p capstan-tests --bench durable
cargo bench -p capstan-tests --bench http
cargo bench -p capstan-tests --bench agent
