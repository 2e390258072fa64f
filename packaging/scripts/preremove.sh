#!/bin/sh
# Before removal (not upgrade): stop and disable npud, under systemd only.
set -e
[ -d /run/systemd/system ] || exit 0
# deb: "remove"; rpm: $1 = 0 when the last version goes away.
case "$1" in
    remove|0)
        systemctl disable --now npud.service npud.socket >/dev/null 2>&1 || true
        ;;
esac
exit 0
