#!/bin/sh
# Installs Debian's chromium for the browser proof (test/browser/core.browser.test.ts).
# Needs root (or sudo) and network access to the Debian mirror. Idempotent.
set -eu
if [ -x /usr/bin/chromium ]; then
  echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium
/usr/bin/chromium --version || true
