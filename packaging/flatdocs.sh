#!/usr/bin/env bash
# Writes README.md and docs/*.md into one flat folder, as the packages
# install them (/usr/share/doc/npud) and the Windows zip holds them, with
# the links that point into the repository rewritten to where the files are
# there: docs/X.md and ../README.md beside each other, and the files the
# packages install elsewhere at their installed paths. Usage:
#   flatdocs.sh DIR package   (the .deb and .rpm)
#   flatdocs.sh DIR windows   (the zip: npud.toml beside the docs; the
#                              files it does not ship lose their link)
set -euo pipefail
dest="$1"
target="${2:-package}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$dest"

case "$target" in
package)
    installed=(
        -e 's#](\(\.\./\)\{0,1\}packaging/npud\.toml)#](/etc/npud/npud.toml)#g'
        -e 's#](\.\./packaging/grafana-dashboard\.json)#](/usr/share/npud/grafana-dashboard.json)#g'
        -e 's#](\.\./packaging/fleet/#](/usr/share/npud/fleet/#g'
    ) ;;
windows)
    installed=(
        -e 's#](packaging/windows/npud\.toml)#](npud.toml)#g'
        -e 's#](\(\.\./\)\{0,1\}packaging/npud\.toml)#](npud.toml)#g'
        -e 's#\[\([^]]*\)\](\.\./packaging/[^)]*)#\1#g'
    ) ;;
*)
    echo "flatdocs.sh: unknown target '$target' (package or windows)" >&2
    exit 2 ;;
esac

for f in README.md docs/*.md; do
    # The source examples under docs/examples are not installed: their
    # names stay, as text.
    sed -e 's#\[\([^]]*\)\](\(docs/\)\{0,1\}examples/[^)]*)#\1#g' \
        -e 's#](docs/#](#g' -e 's#](\.\./README\.md#](README.md#g' "${installed[@]}" "$f" >"$dest/$(basename "$f")"
done
