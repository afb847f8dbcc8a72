#!/usr/bin/env bash
# A throwaway PostgreSQL for the test suites: its own folder, a free
# loopback port, trust authentication, stopped and deleted by
# stop_throwaway_postgres. Sourced by scripts/test.sh and scripts/bench.sh;
# PG_OPTIONS adds server settings (the benchmarks load pg_stat_statements).

pg_bin_dir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$dir" ] && command -v initdb >/dev/null 2>&1; then
        dir=$(dirname "$(command -v initdb)")
    fi
    echo "$dir"
}

start_throwaway_postgres() {
    local bin
    bin=$(pg_bin_dir)
    if [ -z "$bin" ]; then
        echo "setup: installing PostgreSQL (Debian package postgresql)"
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        else
            sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        fi
        bin=$(pg_bin_dir)
    fi
    PG_DIR=$(mktemp -d /tmp/capstan-pg.XXXXXX)
    PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # PostgreSQL refuses to run as root; as root, run it as the postgres user.
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$PG_DIR"
        PG_AS=(runuser -u postgres --)
    else
        PG_AS=()
    fi
    PG_BIN=$bin
    "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/db" -A trust -U capstan >/dev/null
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/db" -l "$PG_DIR/log" -w \
        -o "-k $PG_DIR -p $PG_PORT -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off ${PG_OPTIONS:-}" start >/dev/null
    export CAPSTAN_TEST_POSTGRES_URL="postgres://capstan@127.0.0.1:$PG_PORT/postgres"
    echo "test PostgreSQL on 127.0.0.1:$PG_PORT"
}

stop_throwaway_postgres() {
    if [ -n "${PG_DIR:-}" ]; then
        "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/db" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$PG_DIR"
    fi
}
