#!/usr/bin/env bash
# Installs Debian's chromium for the admin page's browser tests
# (integration/admin_browser*_test.go), unless it is already there; it
# never downloads a browser build of its own.
set -euo pipefail
"$(dirname "$0")/apt-need.sh" chromium.sh /usr/bin/chromium "the browser tests" chromium fonts-dejavu-core
