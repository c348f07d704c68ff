# SPDX-License-Identifier: MIT
# programs.python3: an allocation-heavy python3 script (dicts, strings, lists) prints the same
# checksum under tessera as under the system allocator, and reports that tessera is mapped.
source "$(dirname "$0")/common.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

PYTHON=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
[ -n "$PYTHON" ] || die "python3 not found"
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1

"$PYTHON" "$HERE/workload.py" > "$SCRATCH/system.out" || die "workload failed without tessera"
grep -q '^allocator: system$' "$SCRATCH/system.out" || die "reference run already on tessera?"
start=$(date +%s.%N)
preloaded "$PYTHON" "$HERE/workload.py" > "$SCRATCH/tessera.out" ||
  die "python3 under tessera exited with status $?"
end=$(date +%s.%N)
grep -q '^allocator: tessera$' "$SCRATCH/tessera.out" || die "python3 did not run on tessera"
grep -v '^allocator:' "$SCRATCH/system.out" > "$SCRATCH/system.sum"
grep -v '^allocator:' "$SCRATCH/tessera.out" > "$SCRATCH/tessera.sum"
same_output "$SCRATCH/system.sum" "$SCRATCH/tessera.sum" "python3 workload"
echo "programs.python3: ok: $(cat "$SCRATCH/tessera.sum") ($(awk "BEGIN { printf \"%.1f\", $end - $start }") s under tessera)"
