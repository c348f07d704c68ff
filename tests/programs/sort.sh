# SPDX-License-Identifier: MIT
# programs.sort: coreutils sort (which allocates large buffers and many line records) sorts a
# generated 40 MB file under tessera, numerically and lexically, with 2 threads; the output
# must be byte-identical to sort without tessera.
source "$(dirname "$0")/common.sh"
export LC_ALL=C

# 800,000 deterministic lines of varying length.
awk 'BEGIN {
  x = 42
  for (i = 0; i < 800000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648
    printf "%d %s%s\n", x % 1000003, substr("qwertyuiopasdfghjklzxcvbnm", 1 + x % 26, 1 + x % 17), x
  }
}' > "$SCRATCH/input.txt"

for opts in "" "-n" "-k2,2 -k1,1n" "-u -r"; do
  # shellcheck disable=SC2086
  sort $opts --parallel=2 -S 64M "$SCRATCH/input.txt" > "$SCRATCH/expected.txt"
  # shellcheck disable=SC2086
  preloaded_checked sort $opts --parallel=2 -S 64M "$SCRATCH/input.txt" > "$SCRATCH/actual.txt" ||
    die "sort $opts under tessera exited with status $? (99: tessera was not mapped)"
  same_output "$SCRATCH/expected.txt" "$SCRATCH/actual.txt" "sort $opts"
done
echo "programs.sort: ok: $(wc -l < "$SCRATCH/input.txt") lines, 4 orderings identical"
