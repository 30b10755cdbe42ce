#!/bin/sh
# Installs what the browser test (tree.js) needs, each part only when missing:
# Debian's Chromium at /usr/bin/chromium (apt, as root or through sudo) and the
# npm packages pinned in package-lock.json, into ui-test/node_modules.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

if [ ! -x /usr/bin/chromium ]; then
	if [ "$(id -u)" -eq 0 ]; then
		sudo=""
	elif command -v sudo >/dev/null 2>&1; then
		sudo="sudo"
	else
		echo "ui-test/setup.sh: /usr/bin/chromium is missing and installing it needs root: apt-get install chromium" >&2
		exit 1
	fi
	echo "ui-test/setup.sh: installing chromium"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		chromium fonts-dejavu-core
fi

# npm writes node_modules/.package-lock.json on every install; a lock file
# newer than it means the pins changed since.
stamp="$here/node_modules/.package-lock.json"
if [ ! -f "$stamp" ] || [ "$here/package-lock.json" -nt "$stamp" ] ||
	[ ! -f "$here/node_modules/playwright-core/package.json" ]; then
	echo "ui-test/setup.sh: installing npm packages"
	npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
fi
