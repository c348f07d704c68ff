# SPDX-License-Identifier: MIT
# Shared by the programs.* drivers. Each driver is run by ctest as
#   bash <driver> <path of libtessera.so> <scratch directory> [extra arguments]
# and fails (exit 1, "FAIL: ..." on stderr) unless the program's output under tessera is
# exactly the known / system-allocator output.
set -euo pipefail

LIB=${1:?usage: $0 <libtessera.so> <scratch dir>}
SCRATCH=${2:?usage: $0 <libtessera.so> <scratch dir>}
shift 2
[ -f "$LIB" ] || { echo "FAIL: $LIB does not exist" >&2; exit 1; }
LIB=$(readlink -f "$LIB")
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
# A test run must not inherit someone's tessera configuration; the test may set its own
# (TESSERA_TEST_CONF: the hardened.programs.* tests run with hardened:true).
unset TESSERA_CONF
if [ -n "${TESSERA_TEST_CONF:-}" ]; then export TESSERA_CONF="$TESSERA_TEST_CONF"; fi

die() {
  echo "FAIL: $*" >&2
  exit 1
}

# Runs a command with tessera preloaded.
preloaded() {
  LD_PRELOAD="$LIB" "$@"
}

# Proves that preloading takes effect for a program started the way the drivers start them:
# a shell with LD_PRELOAD set checks its own memory map, then execs the program (same
# process, same environment).
# usage: preloaded_checked <program> [args...]
preloaded_checked() {
  LD_PRELOAD="$LIB" sh -c 'grep -q libtessera /proc/$$/maps || exit 99; exec "$@"' sh "$@"
}

# Compares two files; on a difference prints the first lines of the diff and fails.
same_output() { # <expected file> <actual file> <what>
  if ! cmp -s "$1" "$2"; then
    diff "$1" "$2" | head -20 >&2 || true
    die "$3: output under tessera differs from the expected output"
  fi
}
