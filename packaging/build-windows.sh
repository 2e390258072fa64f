#!/usr/bin/env bash
# Builds dist/npud_<version>_windows_amd64.zip: npud.exe with the OpenVINO
# engine (cgo, cross-compiled with Debian's mingw-w64; OpenVINO GenAI's DLLs
# are loaded at run time), an example configuration, the README and the docs.
# Environment, all optional:
#   VERSION   the version in the file name and the binary (default: packaging/version.sh)
#   DIST_DIR  where the zip goes (default: ./dist)
#   WINCC     the mingw-w64 C compiler (default: x86_64-w64-mingw32-gcc)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
WINCC="${WINCC:-x86_64-w64-mingw32-gcc}"
DIST_DIR="$(realpath -m -- "${DIST_DIR:-$root/dist}")"
VERSION="${VERSION:-$(bash packaging/version.sh)}"

# make package must keep working where the cross compiler is missing: the
# Linux packages are made, the zip is skipped, and it says so.
if ! command -v "$WINCC" >/dev/null || ! command -v zip >/dev/null; then
    echo "build-windows.sh: skipping the Windows zip: it needs $WINCC and zip (apt-get install gcc-mingw-w64-x86-64 zip)" >&2
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/npud" "$DIST_DIR"
GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC="$WINCC" \
    go build -tags nomsgpack -ldflags "-s -w -X github.com/npud/npud/daemon.Version=$VERSION" -o "$work/npud/npud.exe" .
cp packaging/windows/npud.toml "$work/npud/npud.toml"
# The README and the docs side by side, their links rewritten for the folder.
bash packaging/flatdocs.sh "$work/npud" windows
zipfile="$DIST_DIR/npud_${VERSION}_windows_amd64.zip"
rm -f "$zipfile"
(cd "$work" && zip -qr -X "$zipfile" npud)
echo "build-windows.sh: $zipfile"
