#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs output_test and checks the files without external profilers: gzip validity, the
# summary and leak report name hot before cold with about the right bytes, the jeprof
# file's shape, the timeline parses as JSON Lines and tessera-plot draws it.
# $1 output_test  $2 scratch dir  $3 tests/prof  $4 tools/tessera-plot
set -eu
bin=$1 dir=$2 plot=$4
rm -rf "$dir" && mkdir -p "$dir"
"$bin" "$dir"
pid=$(cd "$dir" && ls prof.*.0.u.heap | sed 's/prof\.\([0-9]*\)\..*/\1/')
gzip -t "$dir/prof.$pid.0.u.pb.gz"
echo "gzip -t: ok"
head -1 "$dir/prof.$pid.0.u.heap" | grep -qx 'heap_v2/16384'
grep -q '^MAPPED_LIBRARIES:' "$dir/prof.$pid.0.u.heap"
grep -qE '^@( 0x[0-9a-f]+)+$' "$dir/prof.$pid.0.u.heap"
echo "heap_v2 shape: ok"
python3 - "$dir/prof.$pid.summary.txt" "$dir/leaks.txt" <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = open(path).read()
    sites = re.findall(r'^#\d+: (\d+) bytes .*\n    (\S+)', text, re.M)
    assert len(sites) >= 2, (path, text[:500])
    (hot_bytes, hot_frame), (cold_bytes, cold_frame) = sites[0], sites[1]
    assert hot_frame.startswith('hot+'), (path, sites)
    assert cold_frame.startswith('cold+'), (path, sites)
    for got, want in ((int(hot_bytes), 64 << 20), (int(cold_bytes), 8 << 20)):
        assert abs(got / want - 1) < 0.2, (path, got, want)
    print(path.split('/')[-1], 'hot', hot_bytes, 'cold', cold_bytes, ': ok')
PY
python3 - "$dir/timeline.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]['type'] == 'header' and lines[0]['cmdline'][0].endswith('prof_output'), lines[0]
rows = lines[1:]
assert len(rows) == 5 and all(r['pid'] == lines[0]['pid'] for r in rows)
assert [r['allocated'] for r in rows] == [i * (16 << 20) for i in range(5)]
assert all(a['t_ms'] <= b['t_ms'] for a, b in zip(rows, rows[1:]))
print('timeline: ok')
PY
python3 "$plot" "$dir/timeline.jsonl" -o "$dir/memory.svg"
python3 -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert d.getElementsByTagName('polyline'), 'no curve'" "$dir/memory.svg"
echo "tessera-plot: ok"
