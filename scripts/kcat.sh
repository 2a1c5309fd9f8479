#!/usr/bin/env bash
# Installs Debian's kcat for the real-client tests (integration/clients/
# kcat_test.go, examples/kcat), unless it is already on PATH.
set -euo pipefail
"$(dirname "$0")/apt-need.sh" kcat.sh kcat "the real-client tests" kcat
