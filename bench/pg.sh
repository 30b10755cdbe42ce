#!/usr/bin/env bash
# PostgreSQL for the benchmark, from Debian's packages, on a free loopback
# port, with its data under .cache/bench/pg. Run as root (the server itself
# runs as the postgres user).
#
#   bench/pg.sh up     installs postgresql if missing, starts a fresh cluster,
#                      waits until it accepts connections and writes
#                      .cache/bench/pg/env (BENCH_PG_DSN=...)
#   bench/pg.sh down   stops it (fast shutdown) and removes the cluster
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=$PWD/.cache/bench/pg
ENV_FILE=$DIR/env
STARTUP_TIMEOUT=${BENCH_PG_STARTUP_TIMEOUT:-60} # seconds

log() { echo "bench/pg.sh: $*" >&2; }

pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return 0; }
	done
	return 1
}

as_postgres() { runuser -u postgres -- "$@"; }

up() {
	local bin port deadline
	if ! bin=$(pg_bin); then
		log "installing postgresql (Debian)"
		apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
		bin=$(pg_bin)
	fi
	down >/dev/null 2>&1 || true
	mkdir -p "$DIR"
	chown postgres: "$DIR"
	as_postgres "$bin/initdb" -D "$DIR/data" -A trust -U postgres --no-sync -E UTF8 >"$DIR/initdb.log"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# Durability as shipped (fsync on, synchronous_commit on): it competes as
	# a durable store. Loopback only; the socket lives in the data folder.
	as_postgres "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -s \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $DIR/data -c max_connections=100" start
	deadline=$((SECONDS + STARTUP_TIMEOUT))
	until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "PostgreSQL did not accept connections within ${STARTUP_TIMEOUT}s; see $DIR/server.log"
			return 1
		fi
		sleep 0.1
	done
	as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" bench
	echo "BENCH_PG_DSN=postgresql://postgres@127.0.0.1:$port/bench" >"$ENV_FILE"
	log "up on 127.0.0.1:$port ($("$bin/postgres" --version))"
}

down() {
	local bin
	if bin=$(pg_bin) && [ -f "$DIR/data/postmaster.pid" ]; then
		as_postgres "$bin/pg_ctl" -D "$DIR/data" -s -m fast -w stop || true
		log "stopped"
	fi
	rm -rf "$DIR"
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
	echo "usage: bench/pg.sh up|down" >&2
	exit 2
	;;
esac
