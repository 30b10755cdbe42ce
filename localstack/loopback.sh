#!/usr/bin/env bash
# Checks that a server of the local AWS stack listens on loopback only:
#
#   localstack/loopback.sh NAME PID PORT
#
# PID is the server's process group (up.sh starts each with setsid), so the
# sockets of every process it spawned count. It fails, listing them, when
# any of them listens on an address other than 127.0.0.0/8 or ::1 (0.0.0.0
# or :: would let anyone who reaches the machine read and write the test
# table and bucket), and when none listens on 127.0.0.1:PORT (so that a
# check that sees nothing cannot pass). It reads `ss -ltnp`, which shows
# the owner of sockets of the user's own processes (all of them as root).
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: localstack/loopback.sh NAME PID PORT" >&2
	exit 2
fi
name=$1 pgid=$2 port=$3

pids=$(pgrep -g "$pgid" || true)
if [ -z "$pids" ]; then
	echo "localstack/loopback.sh: $name (process group $pgid) is not running" >&2
	exit 1
fi
pattern=$(printf 'pid=%s,|' $pids)
pattern=${pattern%|}

# Local address is the fourth field: 127.0.0.1:80, [::1]:80, 0.0.0.0:80,
# [::]:80, *:80, [::ffff:127.0.0.1]:80.
listening=$(ss -Hltnp | grep -E "$pattern" | awk '{print $4}' || true)
exposed=$(echo "$listening" | grep -vE '^(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' | grep . || true)
if [ -n "$exposed" ]; then
	echo "localstack/loopback.sh: $name (process group $pgid) listens beyond loopback, where anyone who reaches" \
		"this machine can use it:" $exposed >&2
	exit 1
fi
if ! echo "$listening" | grep -qx "127.0.0.1:$port"; then
	echo "localstack/loopback.sh: $name (process group $pgid) does not listen on 127.0.0.1:$port" \
		"(listening: ${listening:-nothing})" >&2
	exit 1
fi
