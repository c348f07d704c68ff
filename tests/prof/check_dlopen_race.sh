#!/bin/bash
# SPDX-License-Identifier: MIT
# prof_dlopen_race under prof:true at a short interval: no crash and no deadlock while a
# thread dlopens and dlcloses libraries that other samples unwind through; the leak
# report's top site is keep_site called by sampler, its bytes within 20% of those kept;
# every stack of the summary, the libraries' included, is whole: it ends in libc (a
# thread's start) or the program (_start), not cut short by a wrong unwind step.
# $1 prof_dlopen_race  $2 library A  $3 library B  $4 scratch dir
set -eu
bin=$1 lib_a=$2 lib_b=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
TESSERA_CONF="prof:true,lg_prof_sample:12,prof_leak:true,prof_final:true,prof_prefix:$dir/r" \
  timeout 100 "$bin" "$lib_a" "$lib_b" 2>"$dir/stderr.txt"
python3 - "$(ls "$dir"/r.*.leak.txt)" "$(ls "$dir"/r.*.summary.txt)" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sites = re.findall(r'^#\d+: (\d+) bytes[^\n]*\n\s+(\w+)\+\S+[^\n]*\n\s+(\w+)\+', text, re.M)
assert sites, text[:2000]
nbytes, site, caller = sites[0]
assert (site, caller) == ('keep_site', 'sampler'), sites[:3]
kept = 3 * 4000 * 1024
assert abs(int(nbytes) / kept - 1) < 0.2, (nbytes, kept)
summary = open(sys.argv[2]).read()
stacks = [b.strip().splitlines() for b in re.split(r'^#\d+: [^\n]*\n', summary, flags=re.M)[1:]]
stacks = [[l.strip() for l in s if l.startswith('    ')] for s in stacks]
through_lib = [s for s in stacks if any(l.startswith('loader+') for l in s) and s[0].startswith('0x')]
assert through_lib, summary[:3000]
for s in stacks:
    assert s and ('libc.so' in s[-1] or 'prof_dlopen_race' in s[-1]), s
print('dlopen race: keep_site <- sampler, %s bytes of %d; %d stacks whole (%d through the libraries): ok'
      % (nbytes, kept, len(stacks), len(through_lib)))
PY
