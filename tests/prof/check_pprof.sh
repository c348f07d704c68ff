#!/bin/bash
# SPDX-License-Identifier: MIT
# Go's pprof reads the .pb.gz: hot and cold get their bytes within 20%.
# Skips (77) when pprof cannot be built (Debian golang-go, golang-github-google-pprof-dev).
# $1 output_test  $2 scratch dir  $3 tests/prof
set -eu
bin=$1 dir=$2 here=$3
rm -rf "$dir" && mkdir -p "$dir"
pprof=$dir/../pprof
if ! bash "$here/build-pprof.sh" "$pprof"; then echo "SKIP: pprof unavailable"; exit 77; fi
"$bin" "$dir" >/dev/null
file=$(ls "$dir"/prof.*.0.u.pb.gz)
HOME=$dir "$pprof" -top -nodecount=20 -sample_index=inuse_space "$file" > "$dir/top.txt" 2>&1 || { cat "$dir/top.txt"; exit 1; }
cat "$dir/top.txt"
python3 - "$dir/top.txt" <<'PY'
import re, sys
units = {'B': 1, 'kB': 1024, 'KB': 1024, 'MB': 1024 ** 2, 'GB': 1024 ** 3}  # pprof's units are binary
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*[\d.]+\w*\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)(\w+)\s+[\d.]+%\s+(\S+)', line)
    if m: rows[m.group(3)] = float(m.group(1)) * units[m.group(2)]
for name, want in (('hot', 64 << 20), ('cold', 8 << 20)):
    assert name in rows, (name, rows)
    assert abs(rows[name] / want - 1) < 0.2, (name, rows[name], want)
print('pprof -top: hot %.0f, cold %.0f bytes: ok' % (rows['hot'], rows['cold']))
PY
