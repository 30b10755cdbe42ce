#!/usr/bin/env bash
# Starts a local AWS stack on 127.0.0.1 for the integration tests, without
# Docker: DynamoDB from dynoxide (npm) and S3 from LocalStack 4.14.0's S3
# provider run on the host, or moto server when LocalStack cannot start here.
# Everything is installed under .cache/localstack; ports are free ones picked
# at start. The endpoints are written to .cache/localstack/env, to be sourced:
#
#   localstack/up.sh && . .cache/localstack/env && go test -tags integration ./...
#
# Running it again while the stack is up does nothing. localstack/down.sh stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=.cache/localstack
ENV_FILE=$DIR/env
DYNOXIDE_VERSION=1.2.1
DYNOXIDE=$DIR/npm/node_modules/@dynoxide/linux-x64/dynoxide
MOTO_VERSION=5.2.1
STARTUP_TIMEOUT=${LOCALSTACK_STARTUP_TIMEOUT:-120} # seconds, per service
mkdir -p "$DIR"

log() { echo "localstack/up.sh: $*" >&2; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_dynoxide() {
	if [ ! -x "$DYNOXIDE" ] || [ "$("$DYNOXIDE" --version 2>/dev/null)" != "dynoxide $DYNOXIDE_VERSION" ]; then
		log "installing dynoxide $DYNOXIDE_VERSION"
		npm install --prefix "$DIR/npm" --no-audit --no-fund --no-save --loglevel=error "@dynoxide/linux-x64@$DYNOXIDE_VERSION" >&2
	fi
}

# LocalStack 4.14.0 needs Python 3.12 or newer (its code uses PEP 695 generics,
# though its metadata says 3.10).
localstack_python() {
	local p roots=()
	# pyenv keeps versions it has not selected out of PATH (its shims refuse).
	if command -v pyenv >/dev/null; then
		roots=("$(pyenv root)"/versions/3.1[3-9]*/bin/python3 "$(pyenv root)"/versions/3.12*/bin/python3)
	fi
	for p in python3.13 python3.12 python3 "${roots[@]}"; do
		if command -v "$p" >/dev/null && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

install_localstack() {
	local venv=$DIR/venv-s3 req=localstack/requirements-s3.txt py
	if [ -f "$venv/.installed" ] && cmp -s "$req" "$venv/.installed"; then
		return 0
	fi
	py=$(localstack_python) || {
		log "no Python 3.12+ for LocalStack"
		return 1
	}
	log "installing LocalStack's S3 into $venv (once; about a minute)"
	rm -rf "$venv"
	"$py" -m venv "$venv" &&
		"$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2 &&
		cp "$req" "$venv/.installed"
}

# --install: only install what the stack runs (make test does it while the
# unit tests run, so that starting the stack later costs no download).
# LocalStack needing a Python it cannot find is not an error here: up.sh
# falls back to moto then.
if [ "${1:-}" = --install ]; then
	install_dynoxide
	install_localstack || log "LocalStack's S3 not installed; up.sh will use moto"
	exit 0
fi

# A stack already up is kept if it listens on loopback only (one started
# before up.sh checked may not).
if [ -f "$ENV_FILE" ] && alive "$DIR/dynamodb.pid" && alive "$DIR/s3.pid"; then
	ports=$(. "$ENV_FILE" && echo "${AWS_ENDPOINT_URL_DYNAMODB##*:} ${AWS_ENDPOINT_URL_S3##*:}")
	if localstack/loopback.sh dynamodb "$(cat "$DIR/dynamodb.pid")" "${ports% *}" &&
		localstack/loopback.sh s3 "$(cat "$DIR/s3.pid")" "${ports#* }"; then
		log "already up ($ENV_FILE)"
		exit 0
	fi
	log "restarting the stack that is up"
fi
# A half-started or crashed stack: clear it before starting again.
"$(dirname "$0")/down.sh" >/dev/null 2>&1 || true

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for NAME PIDFILE URL: polls URL until it answers, failing early if the
# process died and after STARTUP_TIMEOUT seconds.
wait_for() {
	local name=$1 pidfile=$2 url=$3 deadline=$((SECONDS + STARTUP_TIMEOUT))
	until curl -s -o /dev/null --max-time 2 "$url"; do
		if ! alive "$pidfile"; then
			log "$name exited during startup"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "$name did not answer on $url within ${STARTUP_TIMEOUT}s"
			return 1
		fi
		sleep 0.1
	done
}

# start NAME PIDFILE LOG CMD...: starts CMD in its own process group, so that
# down.sh stops it with everything it spawned.
start() {
	local name=$1 pidfile=$2 logfile=$3
	shift 3
	setsid "$@" >"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	log "$name started (pid $!, log $logfile)"
}

# loopback NAME PIDFILE PORT: refuses to go on, stopping the whole stack,
# unless the server listens on loopback only (localstack/loopback.sh).
loopback() {
	if ! localstack/loopback.sh "$1" "$(cat "$2")" "$3"; then
		log "stopping the stack: $1 must listen on 127.0.0.1 only"
		localstack/down.sh >/dev/null 2>&1 || true
		exit 1
	fi
}

stop() {
	if alive "$1"; then
		kill -TERM -- "-$(cat "$1")" 2>/dev/null || kill -TERM "$(cat "$1")" 2>/dev/null || true
	fi
	rm -f "$1"
}

# --- DynamoDB: dynoxide --------------------------------------------------------
install_dynoxide
DYNAMODB_PORT=$(free_port)
start dynoxide "$DIR/dynamodb.pid" "$DIR/dynamodb.log" "$DYNOXIDE" serve --host 127.0.0.1 --port "$DYNAMODB_PORT"
wait_for dynoxide "$DIR/dynamodb.pid" "http://127.0.0.1:$DYNAMODB_PORT/"
loopback dynoxide "$DIR/dynamodb.pid" "$DYNAMODB_PORT"

# --- S3: LocalStack, else moto -----------------------------------------------
start_localstack() {
	local root=$DIR/localstack-root
	rm -rf "$root"
	mkdir -p "$root"
	S3_PORT=$(free_port)
	# Host mode, S3 only, nothing reaching out: no DNS server, no certificate
	# download, no analytics. The gateway is hypercorn: LocalStack's default
	# server (twisted) takes the port of GATEWAY_LISTEN but not its address,
	# and listens on 0.0.0.0.
	start localstack-s3 "$DIR/s3.pid" "$DIR/s3.log" env \
		SERVICES=s3 EAGER_SERVICE_LOADING=1 GATEWAY_SERVER=hypercorn \
		GATEWAY_LISTEN="127.0.0.1:$S3_PORT" LOCALSTACK_HOST="127.0.0.1:$S3_PORT" \
		DNS_ADDRESS=0 SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 \
		FILESYSTEM_ROOT="$PWD/$root" \
		"$DIR/venv-s3/bin/python" -m localstack.runtime.main
	wait_for localstack-s3 "$DIR/s3.pid" "http://127.0.0.1:$S3_PORT/_localstack/health" || return 1
	# The gateway answers before the provider is loaded; ask S3 itself.
	local deadline=$((SECONDS + STARTUP_TIMEOUT))
	until curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$S3_PORT/"; do
		if ! alive "$DIR/s3.pid" || [ "$SECONDS" -ge "$deadline" ]; then
			log "LocalStack is up but its S3 does not answer"
			return 1
		fi
		sleep 0.1
	done
	loopback localstack-s3 "$DIR/s3.pid" "$S3_PORT"
}

start_moto() {
	local py=python3
	if ! python3 -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
		if [ ! -x "$DIR/venv-moto/bin/python" ]; then
			log "installing moto $MOTO_VERSION into $DIR/venv-moto"
			python3 -m venv "$DIR/venv-moto"
			"$DIR/venv-moto/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION" >&2
		fi
		py=$DIR/venv-moto/bin/python
	fi
	S3_PORT=$(free_port)
	start moto "$DIR/s3.pid" "$DIR/s3.log" "$py" -m moto.server -H 127.0.0.1 -p "$S3_PORT"
	wait_for moto "$DIR/s3.pid" "http://127.0.0.1:$S3_PORT/moto-api/"
	loopback moto "$DIR/s3.pid" "$S3_PORT"
}

S3_SERVER=localstack
if [ "${LOCALSTACK_S3:-localstack}" = moto ] || ! { install_localstack && start_localstack; }; then
	if [ "${LOCALSTACK_S3:-localstack}" != moto ]; then
		log "LocalStack's S3 could not start (see $DIR/s3.log); using moto instead"
		[ -f "$DIR/s3.log" ] && cp "$DIR/s3.log" "$DIR/s3-localstack-failed.log"
	fi
	stop "$DIR/s3.pid"
	S3_SERVER=moto
	start_moto
fi

cat >"$ENV_FILE.tmp" <<EOF
# Written by localstack/up.sh; removed by localstack/down.sh.
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DYNAMODB_PORT
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$S3_PORT
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export SAVER_LOCAL_S3=$S3_SERVER
EOF
mv "$ENV_FILE.tmp" "$ENV_FILE"
log "up: DynamoDB (dynoxide) on :$DYNAMODB_PORT, S3 ($S3_SERVER) on :$S3_PORT; source $ENV_FILE"
