#!/bin/bash
# Builds dist/npud_<version>_<arch>.deb and the .rpm with nfpm, from a
# built npud binary (make build). Environment:
#   NPUD_BINARY  the binary to package (default ./npud)
#   DIST_DIR     where the packages go (default dist)
#   VERSION      package version (default 0.1.0~git<commit>)
set -euo pipefail
cd "$(dirname "$0")/.."

export NPUD_BINARY="${NPUD_BINARY:-./npud}"
DIST_DIR="${DIST_DIR:-dist}"
export GOARCH="${GOARCH:-$(go env GOARCH)}"
if [ -z "${VERSION:-}" ]; then
    VERSION="0.1.0~git$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi
export VERSION
[ -x "$NPUD_BINARY" ] || { echo "build.sh: no binary at $NPUD_BINARY (run make build)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Debian wants a changelog in its own format, compressed reproducibly.
CHANGELOG_GZ="$work/changelog.gz"
{
    echo "npud ($VERSION) unstable; urgency=medium"
    echo
    echo "  * Package built from commit $(git rev-parse HEAD 2>/dev/null || echo unknown)."
    echo
    echo " -- npud developers <npud@example.org>  $(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n > "$CHANGELOG_GZ"

# nfpm expands the environment in version and arch, not in file paths: put
# the two generated paths into a copy of the configuration.
sed -e "s|@NPUD_BINARY@|$NPUD_BINARY|" -e "s|@CHANGELOG_GZ@|$CHANGELOG_GZ|" packaging/nfpm.yaml > "$work/nfpm.yaml"

mkdir -p "$DIST_DIR"
for format in deb rpm; do
    go run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2 package \
        --config "$work/nfpm.yaml" --packager "$format" --target "$DIST_DIR/"
done
ls -l "$DIST_DIR"
