#!/usr/bin/env bash
# apt-need.sh NAME BINARY WHY PACKAGE...: installs Debian's PACKAGEs unless
# BINARY (a path, or a command on PATH) is already there. make test uses it
# for the tools its tests run (kcat.sh, chromium.sh); CI runs as root with
# Debian's repositories reachable. It installs nothing else and builds
# nothing itself.
set -euo pipefail

name=$1 bin=$2 why=$3
shift 3
if [ -x "$bin" ] || command -v "$bin" >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$name: $bin is missing and apt-get is not available; install Debian's $* package" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "$name: $bin is missing; run as root (or install sudo) to apt-get install $*" >&2
		exit 1
	fi
	sudo="sudo"
fi
echo "$name: installing Debian's $* for $why" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "$@" >/dev/null
