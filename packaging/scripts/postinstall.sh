#!/bin/sh
# npud: after install or upgrade (deb postinst, rpm %post).
#   deb: $1 = configure, $2 = the version configured before, empty on a
#        first install; or abort-upgrade/abort-remove/abort-deconfigure.
#   rpm: $1 = how many npud packages are installed now: 1 on a first
#        install, 2 or more on an upgrade.
# A first install enables and starts npud; an upgrade restarts it if it
# runs, so the new binary serves. Without a running systemd (a container,
# a chroot, an image build) there is nothing to tell, so nothing is done.
set -e

# Say what real inference still needs: npud doctor exits 0 only when
# OpenVINO GenAI, a device and a model are ready. It never fails the
# installation. (NPUD_BIN: the tests' npud.)
npud="${NPUD_BIN:-/usr/bin/npud}"
case "${1:-}" in
    configure | [0-9]*)
        if [ -x "$npud" ] && ! "$npud" doctor >/dev/null 2>&1; then
            echo "npud: OpenVINO GenAI, the NPU driver or a model is missing, so npud serves its simulated engine (made-up text) until they are there; 'npud doctor' says what to do" >&2
        fi
        ;;
esac

[ -d /run/systemd/system ] || exit 0

case "${1:-}" in
    configure) if [ -z "${2:-}" ]; then action=install; else action=upgrade; fi ;;
    1) action=install ;;
    [0-9]*) action=upgrade ;;
    *) action=none ;;
esac

systemctl daemon-reload >/dev/null 2>&1 || true
case "$action" in
    install)
        systemctl enable npud.service >/dev/null 2>&1 || true
        # A failed start (no render group, port in use) must not fail the
        # package installation.
        if ! systemctl start npud.service >/dev/null 2>&1; then
            echo "npud: installed but not started; see: systemctl status npud" >&2
        fi
        ;;
    upgrade)
        systemctl try-restart npud.service >/dev/null 2>&1 || true
        ;;
esac
exit 0
