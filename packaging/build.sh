#!/usr/bin/env bash
# Builds dist/npud_<version>_<arch>.deb and dist/npud-<version>-1.<arch>.rpm
# with nfpm from an npud binary built beforehand (make build, or make
# package, which builds it and then runs this). Environment, all optional:
#   NPUD_BINARY  the executable to package          (default: ./npud)
#   DIST_DIR     where the packages go               (default: ./dist)
#   VERSION      package version                     (default: packaging/version.sh)
#   GOARCH       target architecture                 (default: go env GOARCH)
# Relative NPUD_BINARY and DIST_DIR are taken from the current directory;
# the defaults are in the repository root.
set -euo pipefail

NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

die() {
    echo "build.sh: $*" >&2
    exit 1
}

# absolute PATH: PATH made absolute from the caller's directory, without
# ./ or ../ parts (nfpm rejects those).
absolute() {
    realpath -m -- "$1"
}

# A Debian version (native package, so no '-revision') that RPM accepts
# too: digits first, then letters, digits, '.', '+' or '~'.
valid_version() {
    [[ $1 =~ ^[0-9][A-Za-z0-9.+~]*$ ]]
}

if [ -n "${NPUD_BINARY:-}" ]; then
    NPUD_BINARY="$(absolute "$NPUD_BINARY")"
fi
if [ -n "${DIST_DIR:-}" ]; then
    DIST_DIR="$(absolute "$DIST_DIR")"
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

NPUD_BINARY="${NPUD_BINARY:-$root/npud}"
DIST_DIR="${DIST_DIR:-$root/dist}"
GOARCH="${GOARCH:-$(go env GOARCH)}"
VERSION="${VERSION:-$(bash packaging/version.sh)}"
if ! valid_version "$VERSION"; then
    die "version '$VERSION' is not a valid Debian/RPM version (a digit first, then only A-Z a-z 0-9 . + ~); set VERSION"
fi
if [ ! -f "$NPUD_BINARY" ] || [ ! -x "$NPUD_BINARY" ]; then
    die "no executable at $NPUD_BINARY: run make build first, or set NPUD_BINARY"
fi

echo "build.sh: npud $VERSION for $GOARCH"

# Reproducible packages: file times from the last commit unless given.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Debian wants a changelog in its own format, gzipped without a timestamp.
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
NPUD_CHANGELOG="$work/changelog.gz"
{
    printf 'npud (%s) unstable; urgency=medium\n\n' "$VERSION"
    printf '  * Built from commit %s.\n\n' "$commit"
    printf ' -- npud developers <npud@example.org>  %s\n' "$(date -R -u -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$NPUD_CHANGELOG"

# The manual page, compressed as Debian policy wants it.
NPUD_MANPAGE="$work/npud.1.gz"
gzip -9nc packaging/npud.1 >"$NPUD_MANPAGE"

# The docs as they are installed: one flat folder, links rewritten.
NPUD_DOCS="$work/doc"
bash packaging/flatdocs.sh "$NPUD_DOCS" package

export VERSION GOARCH NPUD_BINARY NPUD_CHANGELOG NPUD_MANPAGE NPUD_DOCS SOURCE_DATE_EPOCH
mkdir -p "$DIST_DIR"
for packager in deb rpm; do
    go run "$NFPM" package --config packaging/nfpm.yaml --packager "$packager" --target "$DIST_DIR/"
done
