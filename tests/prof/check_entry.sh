#!/bin/bash
# SPDX-License-Identifier: MIT
# Which malloc entry callers reach with prof:true (src/got_patch.h), and that sampling
# through each is unbiased:
#  1. prof:false: the executable's slots keep the default entry;
#  2. prof:true (TESSERA_CONF): its slots hold the profiling entry; a library loaded
#     later (dlopen) keeps the default one; both sites' 32 MiB estimated within 20%;
#  3. prof:true from the program's malloc_conf symbol: the same.
# $1 entry_test  $2 entry_conf_test  $3 libentry_lib.so  $4 scratch dir
set -eu
bin=$1 conf_bin=$2 lib=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"

out=$("$bin" "$lib")
[ "$(echo "$out" | tr '\n' ' ')" = "malloc:default calloc:default lib:default " ] || { echo "prof:false: $out"; exit 1; }
echo "prof:false: default entries: ok"

check() { # $1 label  $2 program  $3 TESSERA_CONF
  rm -f "$dir"/p.*
  out=$(TESSERA_CONF="$3,lg_prof_sample:16,prof_leak:true,prof_prefix:$dir/p" "$2" "$lib" 2>/dev/null)
  [ "$(echo "$out" | tr '\n' ' ')" = "malloc:prof calloc:prof lib:default " ] || { echo "$1: $out"; exit 1; }
  python3 - "$1" "$dir"/p.*.leak.txt <<'PY'
import re, sys
text = open(sys.argv[2]).read()
sites = dict((n, int(b)) for b, n in re.findall(r'^#\d+: (\d+) bytes.*\n\s+(\w+)\+', text, re.M))
for name in ('site_main', 'site_lib'):
    assert name in sites, (name, sites)
    assert abs(sites[name] / (32 << 20) - 1) < 0.2, (name, sites[name])
# Whole stacks: the sampling path starts its unwind at the allocator's entry
# (prof_unwind_capture_from), so a site's record must have the site as its innermost
# frame, main as its caller and _start outermost; no record (the loader's own
# allocations in dlopen may be sampled too) may hold an allocator frame.
for rec in re.findall(r'^#\d+: .*\n((?:    .*\n?)+)', text, re.M):
    frames = [l.split()[0] for l in rec.strip().split('\n')]
    assert not any('tessera' in l for l in rec.split('\n')), rec
    if not any(f.startswith(('site_main+', 'site_lib+')) for f in frames): continue
    assert frames[0].startswith(('site_main+', 'site_lib+')), frames
    assert frames[1].startswith('main+'), frames
    assert frames[-1].startswith('_start+'), frames
print('%s: profiling entry in the executable, default in the dlopened library; '
      'site_main %.1f MiB, site_lib %.1f MiB estimated (32 MiB each): ok'
      % (sys.argv[1], sites['site_main'] / 2**20, sites['site_lib'] / 2**20))
PY
}
check "prof:true" "$bin" "prof:true"
check "malloc_conf prof:true" "$conf_bin" "narenas:2"
