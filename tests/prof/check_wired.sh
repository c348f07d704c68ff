#!/bin/bash
# SPDX-License-Identifier: MIT
# The profiler wired into malloc (prof:true) and the timeline (timeline_ms):
#  1. leak report (stderr and <prefix>.<pid>.leak.txt): hot then leak, largest first;
#     cold (freed before exit) absent; the summary and the final dump written;
#  2. threads, fork (the child dumps) and a 1 kHz SIGPROF timer while sampling;
#  3. the timeline of a 48 MiB peak shows the rise and the return.
# $1 prof_wired  $2 scratch dir  $3 source tree
set -eu
bin=$1 dir=$2 src=$3
rm -rf "$dir" && mkdir -p "$dir"
TESSERA_CONF="prof:true,lg_prof_sample:17,prof_leak:true,prof_final:true,prof_prefix:$dir/p" "$bin" "$dir" 2>"$dir/stderr.txt"
leak=$(ls "$dir"/p.*.leak.txt)
ls "$dir"/p.*.summary.txt "$dir"/p.*.1.f.heap "$dir"/p.*.1.f.pb.gz >/dev/null
python3 - "$leak" "$dir/stderr.txt" <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = open(path).read()
    sites = re.findall(r'^#\d+: (\d+) bytes.*\n\s+(\w+)\+', text, re.M)
    names = [n for _, n in sites]
    assert names[:2] == ['hot', 'leak'], (path, sites)
    assert 'cold' not in names, (path, sites)
    hot = int(sites[0][0])
    assert abs(hot / (64 << 20) - 1) < 0.2, hot
print('leak report: hot then leak, cold absent: ok')
PY
TESSERA_CONF="prof:true,lg_prof_sample:14,prof_prefix:$dir/s" timeout 60 "$bin" "$dir" stress
n=$(ls "$dir"/s.*.u.heap | wc -l)
[ "$n" -ge 4 ] || { echo "expected 4 dumps (3 children, the parent), got $n"; exit 1; }
TESSERA_CONF="timeline_ms:20,timeline_prefix:$dir/t" "$bin" "$dir" peak
python3 - "$dir"/t.*.timeline.jsonl <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]['type'] == 'header', lines[0]
alloc = [l['allocated'] for l in lines[1:]]
peak = max(alloc)
assert peak >= 48 << 20, peak
top = alloc.index(peak)
assert alloc[0] < 8 << 20 and alloc[-1] < 8 << 20, (alloc[0], alloc[-1])
assert sum(1 for a in alloc[top:] if a < 8 << 20) >= 5, alloc  # the return, then idle
print('timeline: %d lines, rise to %.1f MiB and return: ok' % (len(alloc), peak / 2**20))
PY
if [ -x "$src/tools/tessera-plot" ]; then "$src/tools/tessera-plot" -o "$dir/t.svg" "$dir"/t.*.timeline.jsonl; fi
