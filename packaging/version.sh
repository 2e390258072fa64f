#!/usr/bin/env bash
# Prints npud's version, the one every artefact carries: the binary
# (`npud version`, through the Makefile's LDFLAGS), the .deb and .rpm
# (build.sh) and the Windows zip's name (build-windows.sh). It is a
# Debian and RPM version, so the packages can carry it unchanged.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# version_from_git turns `git describe --tags --always` into a package
# version that sorts the way the history does:
#   v1.2.0               -> 1.2.0
#   v1.2.0-5-gabc1234    -> 1.2.0+git5.abc1234   (after 1.2.0, before 1.2.1)
#   v1.3.0-rc1           -> 1.3.0~rc1            (before 1.3.0)
#   no tag: abc1234      -> 0.1.0~git<commits>.abc1234
version_from_git() {
    local desc tag
    if ! desc="$(git describe --tags --always 2>/dev/null)"; then
        echo "0.1.0~unknown"
        return
    fi
    if ! git describe --tags --abbrev=0 >/dev/null 2>&1; then
        echo "0.1.0~git$(git rev-list --count HEAD).$desc"
        return
    fi
    if [[ $desc =~ ^(.+)-([0-9]+)-g([0-9a-f]+)$ ]]; then
        tag="${BASH_REMATCH[1]}"
        desc="${tag#v}+git${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"
    else
        desc="${desc#v}"
    fi
    # A '-' inside the tag (v1.3.0-rc1) marks a pre-release: '~' sorts it
    # before the release in both dpkg and rpm.
    echo "${desc//-/\~}"
}

version_from_git
