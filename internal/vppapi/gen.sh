#!/usr/bin/env bash
# Regenerates the per-version binary-API bindings of internal/vppapi from a VPP source
# archive (README.md): the .api.json files come from VPP's own generator (vppapigen, the
# python code generation of `ninja api_headers`, no C build); the Go code from govpp's
# binapi-generator v0.13.0, importing govpp's bundled type packages (ip_types, ...), which
# are identical in every version the agent supports (docs/vpp-versions.md).
#
#   internal/vppapi/gen.sh 26.06 cnat      # -> internal/vppapi/vpp2606/cnat
#
# VPP_SRC overrides the archive (default ../shared/vpp/src/vpp-<version>.tar.gz).
set -euo pipefail

version=${1:?usage: gen.sh <version> <api file>...}
shift
[ $# -gt 0 ] || { echo "usage: gen.sh <version> <api file>..." >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
src=${VPP_SRC:-$here/../../../shared/vpp/src/vpp-$version.tar.gz}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tar -xzf "$src" -C "$work" --strip-components=1
json=$work/json
mkdir -p "$json"
# Every .api file: the generator resolves the imports of the requested ones.
export PATH=/usr/bin:$PATH # vppapigen needs the system python3 with ply
(cd "$work/src" && find . -name '*.api' | while read -r f; do
	n=$(basename "$f")
	python3 tools/vppapigen/vppapigen.py --includedir . --input "$f" JSON \
		--outputdir "$json" --output "$json/$n.json" >/dev/null 2>&1 || echo "skipped $f" >&2
done)

out=$here/vpp$(echo "$version" | tr -d .)
mod=$work/mod
mkdir -p "$mod"
(cd "$mod" && go mod init genmod >/dev/null 2>&1 &&
	go get go.fd.io/govpp/cmd/binapi-generator@v0.13.0 >/dev/null 2>&1 &&
	go run go.fd.io/govpp/cmd/binapi-generator --input "$json" -o "$work/gen" \
		--import-prefix go.fd.io/govpp/binapi --gen "" --no-source-path-info "$@")
for f in "$@"; do
	mkdir -p "$out/$f"
	cp "$work/gen/$f/$f.ba.go" "$out/$f/"
	echo "generated $out/$f/$f.ba.go" >&2
done
