#!/usr/bin/env bash
# The local AWS stack for the benchmark: the project's own localstack/up.sh
# and down.sh (dynoxide + S3), run from a private root under .cache/bench/aws
# so that a benchmark and `make test-aws` running at the same time never
# share, reuse or stop each other's stack. Installed emulators are borrowed
# from .cache/localstack when they are there (no second download).
#
#   bench/aws.sh up     starts it; endpoints in .cache/bench/aws/.cache/localstack/env
#   bench/aws.sh down   stops it
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=.cache/bench/aws
SHARED=$PWD/.cache/localstack

case "${1:-}" in
up)
	mkdir -p "$ROOT/localstack" "$ROOT/.cache/localstack"
	cp localstack/up.sh localstack/down.sh localstack/loopback.sh localstack/requirements-s3.txt "$ROOT/localstack/"
	for d in npm venv-s3 venv-moto; do
		if [ -d "$SHARED/$d" ] && [ ! -e "$ROOT/.cache/localstack/$d" ]; then
			ln -s "$SHARED/$d" "$ROOT/.cache/localstack/$d"
		fi
	done
	"$ROOT/localstack/up.sh"
	;;
down)
	if [ -x "$ROOT/localstack/down.sh" ]; then
		"$ROOT/localstack/down.sh"
	fi
	;;
*)
	echo "usage: bench/aws.sh up|down" >&2
	exit 2
	;;
esac
