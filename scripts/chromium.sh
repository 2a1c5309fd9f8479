#!/usr/bin/env bash
# Installs Debian's chromium for the admin page's browser test
# (integration/admin_browser_test.go), unless it is already there.
# make test runs it before the tests; CI runs as root with Debian's
# repositories reachable. It installs nothing else and never downloads a
# browser build of its own.
set -euo pipefail

bin=/usr/bin/chromium
if [ -x "$bin" ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium.sh: $bin is missing and apt-get is not available; install Debian's chromium package" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "chromium.sh: $bin is missing; run as root (or install sudo) to apt-get install chromium" >&2
		exit 1
	fi
	sudo="sudo"
fi
echo "chromium.sh: installing Debian's chromium for the browser test" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
"$bin" --version >&2
