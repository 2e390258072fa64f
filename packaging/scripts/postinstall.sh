#!/bin/sh
# After install or upgrade: reload systemd and, on a first install, enable
# and start npud. Outside systemd (containers, chroots) do nothing.
set -e
[ -d /run/systemd/system ] || exit 0
systemctl daemon-reload >/dev/null 2>&1 || true
# deb: "configure" with the old version in $2 on upgrade; rpm: $1 = 1 on
# a first install, 2 on upgrade.
first_install=no
case "$1" in
    configure) [ -z "${2:-}" ] && first_install=yes ;;
    1) first_install=yes ;;
esac
if [ "$first_install" = yes ]; then
    systemctl enable --now npud.service >/dev/null 2>&1 || \
        echo "npud: installed; start it with: systemctl enable --now npud" >&2
else
    systemctl try-restart npud.service >/dev/null 2>&1 || true
fi
exit 0
