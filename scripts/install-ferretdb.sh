#!/usr/bin/env bash
# Installs FerretDB v1.24.2 (MongoDB wire protocol over SQLite) into .tools/bin/ferretdb
# for the Mongo store's contract tests. Idempotent: does nothing when a working binary
# is already there.
#
# Why not just `go install`: a binary built by `go install …@v1.24.2` panics at start-up
# ("Invalid build/version/version.txt file content") because version.txt is generated in
# FerretDB's own release builds and is absent from the module zip. So we `go install` to
# fetch the module and its dependencies into the module cache, then rebuild from a copy
# of the module source with version.txt written, which needs no further download.
set -euo pipefail

VERSION=v1.24.2
MODULE=github.com/FerretDB/FerretDB
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="$ROOT/.tools/bin"
BIN="$BIN_DIR/ferretdb"

works() {
  [ -x "$BIN" ] || return 1
  local out
  out="$("$BIN" --version 2>/dev/null)" || return 1
  [[ "$out" == *"version: $VERSION"* ]]
}

if works; then
  echo "ferretdb $VERSION already installed at $BIN"
  exit 0
fi

command -v go >/dev/null || { echo "install-ferretdb: Go is required (https://go.dev/dl/)" >&2; exit 1; }
mkdir -p "$BIN_DIR"

# 1. fetch the module and its dependencies (the binary this produces is replaced below)
GOBIN="$BIN_DIR" go install "$MODULE/cmd/ferretdb@$VERSION"

# 2. rebuild with version.txt present
SRC="$(go env GOMODCACHE)/github.com/!ferret!d!b/!ferret!d!b@$VERSION"
[ -d "$SRC" ] || { echo "install-ferretdb: module source not found at $SRC" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'chmod -R u+w "$WORK" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cp -R "$SRC" "$WORK/src"
chmod -R u+w "$WORK/src"
echo "$VERSION" > "$WORK/src/build/version/version.txt"
(cd "$WORK/src" && GOFLAGS=-buildvcs=false go build -o "$BIN.new" ./cmd/ferretdb)
mv -f "$BIN.new" "$BIN"

works || { echo "install-ferretdb: $BIN does not start" >&2; exit 1; }
echo "installed ferretdb $VERSION at $BIN"
