#!/bin/bash
# SPDX-License-Identifier: MIT
# The profiler's knobs wired into malloc (knobs_test.c): prof_gdump dumps at new peaks
# only, lg_prof_interval every 2^N bytes, prof.reset starts the counts again, and
# mallocx with an explicit arena is sampled, and freed blocks are reused in LIFO order.
# $1 prof_knobs  $2 scratch dir
set -eu
bin=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
out=$(TESSERA_CONF="prof:true,lg_prof_sample:14,prof_gdump:true,prof_prefix:$dir/g" "$bin" "$dir" gdump)
echo "gdump: $out"
peak=$(echo "$out" | sed -n 's/.*peak_dumps=\([0-9]*\).*/\1/p') after=$(echo "$out" | sed -n 's/.*after=\([0-9]*\).*/\1/p')
[ "$peak" -ge 4 ] || { echo "prof_gdump: expected a dump at each new peak while growing to 16 MiB, got $peak"; exit 1; }
[ "$after" -le $((peak + 1)) ] || { echo "prof_gdump: $((after - peak)) dumps below the peak"; exit 1; }
out=$(TESSERA_CONF="prof:true,lg_prof_sample:14,lg_prof_interval:20,prof_prefix:$dir/i" "$bin" "$dir" interval)
echo "interval: $out"
n=$(echo "$out" | sed -n 's/interval_dumps=//p')
# 16 MiB allocated (and the program's own start): one dump per MiB, counted at samples.
[ "$n" -ge 13 ] && [ "$n" -le 19 ] || { echo "lg_prof_interval:20: expected ~16 dumps for 16 MiB, got $n"; exit 1; }
# Block reuse under prof:true is LIFO, as with prof:false (thousands of samples meanwhile),
# but for the sampled blocks up to 1 KiB, which live in slabs of their own: at most one
# miss each (the sampled allocations of the dump bound them), and at least one.
out=$(TESSERA_CONF="prof:false" "$bin" "$dir" lifo)
echo "lifo (prof:false): $out"
[ "$out" = "lifo_misses=0 large_misses=0" ] || { echo "prof:false: a freed block was not the next one handed out"; exit 1; }
out=$(TESSERA_CONF="prof:true,prof_final:false,prof_leak:false,prof_prefix:$dir/l" "$bin" "$dir" lifo)
echo "lifo (prof:true): $out"
python3 - "$out" "$(ls "$dir"/l.*.u.heap)" <<'PY'
import re, sys
small, large = (int(v) for v in re.fullmatch(r'lifo_misses=(\d+) large_misses=(\d+)', sys.argv[1]).groups())
m = re.search(r'^\s*t\*: \d+: \d+ \[(\d+): \d+\]', open(sys.argv[2]).read(), re.M)
sampled = int(m.group(1))
assert large == 0, 'prof:true: a freed block above 1 KiB was not the next one handed out'
assert 0 < small <= sampled, 'prof:true: %d misses up to 1 KiB for %d sampled allocations' % (small, sampled)
print('lifo (prof:true): %d misses up to 1 KiB, %d sampled allocations: ok' % (small, sampled))
PY
TESSERA_CONF="prof:true,lg_prof_sample:14,prof_prefix:$dir/r" "$bin" "$dir" reset
python3 - "$dir" <<'PY'
import glob, re, sys
files = sorted(glob.glob(sys.argv[1] + '/r.*.u.heap'), key=lambda f: int(f.split('.')[-3]))
assert len(files) == 2, files
def live(f):  # heap_v2 raw totals: sampled blocks live and their bytes
    m = re.search(r'^\s*t\*: (\d+): (\d+) \[', open(f).read(), re.M)
    return int(m.group(1)), int(m.group(2))
before, after = live(files[0]), live(files[1])
period = [int(re.search(r'heap_v2/(\d+)', open(f).read()).group(1)) for f in files]
assert period == [16384, 32768], period
# Before: hot's 8 MiB at 16 KiB: ~512 samples. After the reset: cold's 4 MiB only, at 32
# KiB: ~128 samples (hot's blocks, still live, are forgotten).
assert 350 < before[0] < 700, before
assert 70 < after[0] < 200, after
print('prof.reset: %d samples before, %d after (hot forgotten), lg_sample 14 -> 15: ok' % (before[0], after[0]))
PY
TESSERA_CONF="prof:true,lg_prof_sample:16,prof_leak:true,prof_prefix:$dir/a" "$bin" "$dir" arena 2>/dev/null
python3 - "$(ls "$dir"/a.*.leak.txt)" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sites = re.findall(r'^#\d+: (\d+) bytes.*\n\s+(\w+)\+', text, re.M)
assert sites and sites[0][1] == 'hot_arena', sites
assert abs(int(sites[0][0]) / (16 << 20) - 1) < 0.2, sites[0]
print('mallocx(MALLOCX_ARENA): hot_arena sampled, %.1f MiB estimated: ok' % (int(sites[0][0]) / 2**20))
PY
# The profiler's own memory in the stats (JSON "prof" section). The reset run's sampled
# blocks (1000 bytes: a class with sample slabs, none freed) fill their slabs in turn:
# the padding is the current slab's free regions (0 when it is full), under a slab of
# 16 regions (16 KiB); the arena run's
# (mallocx with an explicit arena) get pages of their own: 3072 bytes of padding each.
for mode in reset arena; do
  TESSERA_CONF="prof:true,lg_prof_sample:14,prof_prefix:$dir/m,stats_print:true,stats_print_opts:J" "$bin" "$dir" $mode 2>"$dir/stats-$mode.json" >/dev/null
done
python3 - "$dir/stats-reset.json" "$dir/stats-arena.json" <<'PY'
import json, sys
def prof(path):
    text = open(path).read()
    doc = json.loads(text[text.index('{\n  "tessera"'):] if '{\n  "tessera"' in text else text[text.index('{'):])
    p = doc['tessera']['prof']
    assert 0 < p['metadata'] <= doc['tessera']['stats']['metadata'], p
    return p
reset, arena = prof(sys.argv[1]), prof(sys.argv[2])
assert 0 <= reset['sampled_padding'] < 16384, reset
# hot_arena keeps 16 MiB of 1000-byte blocks: ~1024 samples at lg 14.
assert 700 * 3072 < arena['sampled_padding'] < 1400 * 3072, arena
print('stats: prof.metadata %d, sampled_padding %d in sample slabs, %d with pages of their own: ok'
      % (reset['metadata'], reset['sampled_padding'], arena['sampled_padding']))
PY
