#!/bin/sh
# After removal: let systemd forget the unit files, under systemd only.
set -e
[ -d /run/systemd/system ] || exit 0
systemctl daemon-reload >/dev/null 2>&1 || true
exit 0
