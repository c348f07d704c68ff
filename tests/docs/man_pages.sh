#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs.man_pages: installs the build into a temporary prefix, checks that the manual pages
# and the documentation are where the README says, reads both pages with `man -l`, and
# checks that tessera(3) names every option and every control name the library has.
#   man_pages.sh BUILD_DIR LIST_NAMES_EXECUTABLE
set -euo pipefail

build=${1:?usage: man_pages.sh BUILD_DIR LIST_NAMES_EXECUTABLE}
list_names=${2:?usage: man_pages.sh BUILD_DIR LIST_NAMES_EXECUTABLE}
prefix=$(mktemp -d "${TMPDIR:-/tmp}/tessera-man.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
fails=0
fail() { printf 'FAIL  %s\n' "$*"; fails=$((fails + 1)); }

cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 ||
  { cat "$prefix.log"; rm -f "$prefix.log"; echo "FAIL  cmake --install"; exit 1; }
rm -f "$prefix.log"

for f in share/man/man1/tessera.1 share/man/man3/tessera.3 share/doc/tessera/README.md \
         share/doc/tessera/LICENSE share/doc/tessera/docs/options.md share/doc/tessera/docs/ctl.md \
         share/doc/tessera/docs/stats.md bin/tessera; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done

# Rendered as a reader sees them: plain ASCII, wide enough that no name is broken.
render() { LC_ALL=C MANWIDTH=200 man -l "$1" 2>"$prefix/man.err" | sed 's/.\x08//g'; }
page1=$(render "$prefix/share/man/man1/tessera.1")
[ ! -s "$prefix/man.err" ] || fail "man -l tessera.1 warned: $(cat "$prefix/man.err")"
page3=$(render "$prefix/share/man/man3/tessera.3")
[ ! -s "$prefix/man.err" ] || fail "man -l tessera.3 warned: $(cat "$prefix/man.err")"

grep -q '^NAME' <<<"$page1" && grep -q 'tessera - run a program' <<<"$page1" ||
  fail "tessera(1) has no NAME section"
# Every option the launcher's --help lists is described in tessera(1).
for opt in $("$prefix/bin/tessera" --help | grep -o -- '^  --[a-z-]*'); do
  grep -q -- "^ *$opt" <<<"$page1" || fail "tessera(1) does not describe $opt"
done

# Whether the page has a paragraph tagged with the name: at the start of a line, alone or
# followed by its text (a short tag shares its line with the text).
tagged() { # page name
  grep -qE "^ *${2//./\\.}( |$)" <<<"$1"
}

names=$("$list_names")
# The options (docs/options.md's table); opt.* also has jemalloc's names for what tessera
# always does (opt.retain, opt.dss), which are control names only.
options=$(sed -n 's/^| `\([a-z_0-9]*\)` |.*/\1/p' "$prefix/share/doc/tessera/docs/options.md")
count=0
while read -r name; do
  count=$((count + 1))
  option=${name#opt.}
  if [ "$option" != "$name" ] && grep -qx -- "$option" <<<"$options"; then
    # An option: a paragraph of its own in OPTIONS.
    tagged "$page3" "$option" || fail "tessera(3) does not describe option $option"
  fi
  tagged "$page3" "$name" || fail "tessera(3) does not describe control name $name"
done <<<"$names"
[ "$count" -gt 50 ] || fail "only $count control names from the library"

if [ "$fails" -gt 0 ]; then
  echo "$fails failed"
  exit 1
fi
echo "man pages: installed, readable, and tessera(3) names all $count control names"
