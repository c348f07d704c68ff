#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds Go's pprof offline from Debian's packaged sources (golang-go and
# golang-github-google-pprof-dev: /usr/share/gocode/src) into $1 (a file path).
# Exits 1 (and prints why) when the sources or the Go toolchain are missing.
# GOPATH mode (GO111MODULE=off) resolves pprof's imports from the packaged tree
# without a module proxy or network access.
set -eu
out=$1
src=/usr/share/gocode/src/github.com/google/pprof
if ! command -v go >/dev/null || [ ! -f "$src/pprof.go" ]; then
  echo "build-pprof: needs Debian packages golang-go and golang-github-google-pprof-dev" >&2
  exit 1
fi
[ -x "$out" ] && exit 0
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$cache" GOFLAGS= GOPROXY=off \
  go build -o "$out" github.com/google/pprof
