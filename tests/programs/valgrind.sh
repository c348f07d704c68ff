#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# programs.valgrind: tessera under valgrind (as callgrind and memcheck users run it): the
# randomized differential test and sort run to completion with tessera preloaded inside
# valgrind's virtual CPU, whose address-space manager refuses some mappings the kernel
# would grant (fixed placements). Skipped (77) when valgrind is not installed.
source "$(dirname "$0")/common.sh"
RANDOM_OPS=${1:?usage: valgrind.sh <lib> <scratch> <tt_random_ops_plain>}
command -v valgrind >/dev/null || { echo "skip: valgrind is not installed"; exit 77; }
export LC_ALL=C
vg() { LD_PRELOAD="$LIB" valgrind --tool=none --error-exitcode=3 -q "$@"; }
vg "$RANDOM_OPS" 20000 7 64 > "$SCRATCH/random.out" 2>&1 || { cat "$SCRATCH/random.out" >&2; die "random_ops under valgrind"; }
seq 1 200000 | awk '{ print ($1 * 7919) % 100003, "line", $1 }' > "$SCRATCH/input.txt"
sort -n "$SCRATCH/input.txt" > "$SCRATCH/expected.txt"
vg sort -n -S 16M "$SCRATCH/input.txt" > "$SCRATCH/actual.txt" || die "sort under valgrind"
same_output "$SCRATCH/expected.txt" "$SCRATCH/actual.txt" "sort under valgrind"
echo "valgrind: random_ops and sort ran under valgrind with tessera"
