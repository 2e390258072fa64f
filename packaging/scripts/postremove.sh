#!/bin/sh
# npud: after removal (deb postrm, rpm %postun).
#   deb: $1 = remove, purge, upgrade, failed-upgrade, abort-install,
#        abort-upgrade or disappear.
#   rpm: $1 = how many npud packages remain: 0 on removal, 1 on upgrade.
# The unit files are gone or replaced: let systemd read them again. Models
# (/var/lib/npud) and compiled models (/var/cache/npud) are kept, also on
# purge: they are large and slow to make again; remove them by hand.
# Without a running systemd, nothing is done.
set -e

[ -d /run/systemd/system ] || exit 0

systemctl daemon-reload >/dev/null 2>&1 || true
case "${1:-}" in
    remove | purge | 0)
        # Forget a failed state left by the removed unit.
        systemctl reset-failed npud.service npud.socket >/dev/null 2>&1 || true
        ;;
esac
exit 0
