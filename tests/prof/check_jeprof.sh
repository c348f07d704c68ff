#!/bin/bash
# SPDX-License-Identifier: MIT
# jemalloc's jeprof reads the .heap file: hot and cold get their bytes within 20%.
# Skips (77) without jeprof (Debian libjemalloc-dev) or binutils.
# $1 output_test  $2 scratch dir
set -eu
bin=$1 dir=$2
command -v jeprof >/dev/null && command -v addr2line >/dev/null || { echo "SKIP: jeprof unavailable"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir"
"$bin" "$dir" >/dev/null
file=$(ls "$dir"/prof.*.0.u.heap)
jeprof --text --inuse_space "$bin" "$file" > "$dir/text.txt" 2> "$dir/stderr.txt" || { cat "$dir/stderr.txt"; exit 1; }
cat "$dir/text.txt"
python3 - "$dir/text.txt" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*[\d.]+\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)\s+[\d.]+%\s+(\S+)', line)
    if m: rows[m.group(2)] = float(m.group(1)) * 1048576
for name, want in (('hot', 64 << 20), ('cold', 8 << 20)):
    assert name in rows, (name, rows)
    assert abs(rows[name] / want - 1) < 0.2, (name, rows[name], want)
print('jeprof --text: hot %.0f, cold %.0f bytes: ok' % (rows['hot'], rows['cold']))
PY
