#!/usr/bin/env bash
# Stops the local AWS stack that localstack/up.sh started: the processes
# named in its pid files (with their process groups), then removes the env
# file. Stopping a stack that is not running is not an error.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=.cache/localstack
STOP_TIMEOUT=10 # seconds before a process that ignores SIGTERM gets SIGKILL

for pidfile in "$DIR/dynamodb.pid" "$DIR/s3.pid"; do
	[ -f "$pidfile" ] || continue
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		# up.sh starts each server with setsid, so its pid is its group's id.
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		deadline=$((SECONDS + STOP_TIMEOUT))
		while kill -0 "$pid" 2>/dev/null; do
			if [ "$SECONDS" -ge "$deadline" ]; then
				kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.1
		done
		echo "localstack/down.sh: stopped $(basename "$pidfile" .pid) (pid $pid)" >&2
	fi
	rm -f "$pidfile"
done
rm -f "$DIR/env"
