#!/usr/bin/env bash
# Runs the benchmarks (release build), with a throwaway PostgreSQL for the
# durable-core figures. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# --bench: the tools the suites use (the languages benchmark builds the
# Python and JavaScript examples with them) and the benchmarks' own: wrk,
# the HTTP benchmark's load generator, and procrastinate, the scale-out
# benchmark's anchor.
scripts/setup.sh --bench
source scripts/postgres.sh
# What the database does per task, for the scale-out benchmark's report.
PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements"
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
