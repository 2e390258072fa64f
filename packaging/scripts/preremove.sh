#!/bin/sh
# npud: before removal (deb prerm, rpm %preun).
#   deb: $1 = remove, upgrade, deconfigure or failed-upgrade.
#   rpm: $1 = how many npud packages remain: 0 on removal, 1 on upgrade.
# On removal, stop and disable the socket and the service (an upgrade
# leaves them running; postinstall restarts the service). Without a
# running systemd, nothing is done.
set -e

[ -d /run/systemd/system ] || exit 0

case "${1:-}" in
    remove | deconfigure | 0)
        # The socket first, so that it cannot start the service again.
        systemctl disable --now npud.socket npud.service >/dev/null 2>&1 || true
        ;;
esac
exit 0
