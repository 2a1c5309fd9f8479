#!/usr/bin/env bash
# Installs Debian's kcat for the real-client tests (integration/clients/
# kcat_test.go, examples/kcat), unless it is already on PATH. make test runs
# it before the tests; CI runs as root with Debian's repositories reachable.
# It installs nothing else and never builds kcat or librdkafka itself.
set -euo pipefail

if command -v kcat >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "kcat.sh: kcat is missing and apt-get is not available; install Debian's kcat package" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "kcat.sh: kcat is missing; run as root (or install sudo) to apt-get install kcat" >&2
		exit 1
	fi
	sudo="sudo"
fi
echo "kcat.sh: installing Debian's kcat for the real-client tests" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq kcat >/dev/null
kcat -V >&2
