#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctl.stats_json: the JSON statistics parse with python3's json module, follow the
schema of docs/stats.md, and their totals agree with a controlled workload.

usage: check_stats.py <stats_workload executable>
"""
import json
import subprocess
import sys


def fail(msg):
    print("FAIL ctl.stats_json: " + msg)
    sys.exit(1)


def main():
    env = {"TESSERA_CONF": "", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, env=env, timeout=60)
    if out.returncode != 0:
        fail("workload exited with %d: %s" % (out.returncode, out.stderr))
    first, _, rest = out.stdout.partition("\n")
    tag, baseline, requested, usable, ctl_after = first.split()
    baseline, requested, usable, ctl_after = map(int, (baseline, requested, usable, ctl_after))
    doc = json.loads(rest)["tessera"]
    if doc["schema"] != 2:
        fail("schema %r" % doc["schema"])
    for key in ("allocated", "active", "metadata", "resident", "mapped", "retained", "dirty", "muzzy"):
        if not isinstance(doc["stats"][key], int):
            fail("stats.%s missing" % key)
    # The workload holds `usable` bytes (requested rounded to the size classes) on top of
    # what was allocated before it; stdio and the runtime may add a little.
    slack = 64 << 10
    for name, value in (("ctl stats.allocated", ctl_after), ("JSON stats.allocated", doc["stats"]["allocated"])):
        grown = value - baseline
        if not (requested <= grown <= usable + slack):
            fail("%s grew by %d; the workload requested %d, usable %d" % (name, grown, requested, usable))
    arenas = doc["arenas"]
    merged = arenas["merged"]
    bins = {b["size"]: b for b in merged["bins"]}
    if bins[112]["curregs"] < 1000 or bins[3072]["curregs"] < 200:
        fail("bin curregs: 112 -> %d, 3072 -> %d" % (bins[112]["curregs"], bins[3072]["curregs"]))
    if merged["large"]["nmalloc"] - merged["large"]["ndalloc"] < 20:
        fail("large blocks live: %d" % (merged["large"]["nmalloc"] - merged["large"]["ndalloc"]))
    for b in merged["bins"]:
        if b["curslabs"] and not 0.0 < b["util"] <= 1.0:
            fail("bin %d util %r" % (b["size"], b["util"]))
        for key in ("nmalloc", "ndalloc", "nrequests", "nfills", "nflushes", "slab_size", "nregs", "lock"):
            if key not in b:
                fail("bin field %s missing" % key)
    per = arenas["per_arena"]
    for key in ("pactive", "pdirty", "mapped"):
        if sum(a["stats"][key] for a in per) != merged[key]:
            fail("per-arena %s does not add up to the merged value" % key)
    if doc["stats"]["active"] != merged["pactive"] * 4096:
        fail("stats.active %d vs merged pactive %d" % (doc["stats"]["active"], merged["pactive"]))
    gathering = doc["gathering"]
    if not isinstance(gathering["on"], bool) or not all(
            isinstance(gathering[k], int) and gathering[k] >= 0 for k in ("page_fault_ns", "moved_page_read_ns")):
        fail("gathering section: %r" % gathering)
    if doc["tcaches"]["count"] < 1 or "base" not in doc["locks"]:
        fail("tcaches/locks sections")
    import os
    if doc["ncpus"] != len(os.sched_getaffinity(0)):
        fail("ncpus %r, the affinity mask has %d" % (doc["ncpus"], len(os.sched_getaffinity(0))))
    for c in doc["tcaches"]["classes"]:
        if not c["cached"] <= c["capacity_max"] <= 2048:
            fail("class %d: %d cached in bins of at most %d blocks" % (c["size"], c["cached"], c["capacity_max"]))
    if max(c["capacity_max"] for c in doc["tcaches"]["classes"]) == 0:
        fail("no thread-cache bin has a capacity")
    print("ctl.stats_json: allocated grew by %d for %d requested bytes (%d usable)"
          % (doc["stats"]["allocated"] - baseline, requested, usable))


main()
