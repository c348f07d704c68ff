#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctl.threads: the exit statistics of tests/ctl/threads_workload.c, written through
stats_prefix, carry pid, cmdline, time, arenas.nthreads_peak, arenas.merged.refaulted and
a threads section with the workload's named threads (exited ones summed by name)."""
import glob, json, os, subprocess, sys, tempfile, time

PER_THREAD = 50000


def run(prog, *args, conf=""):
    d = tempfile.mkdtemp(prefix="tt_threads")
    prefix = os.path.join(d, "s")
    env = dict(os.environ, TESSERA_CONF="narenas:2,stats_print:true,stats_print_opts:J,stats_prefix:"
               + prefix + conf)
    r = subprocess.run([prog, *args], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tessera statistics" not in r.stderr and '"tessera"' not in r.stderr, "stats went to stderr"
    files = glob.glob(prefix + ".*.json")
    assert len(files) == 1, files
    assert files[0][len(prefix) + 1:-len(".json")].isdigit(), files
    with open(files[0]) as f:
        return json.load(f)["tessera"]


def main():
    prog = sys.argv[1]
    t0 = time.time()
    t = run(prog)
    assert abs(t["time"] - t0) < 60, t["time"]
    assert isinstance(t["pid"], int) and t["pid"] > 0
    assert t["cmdline"] == prog, t["cmdline"]
    assert t["arenas"]["nthreads_peak"] >= 5, t["arenas"]["nthreads_peak"]
    assert "refaulted" in t["arenas"]["merged"]
    by = {th["name"]: th for th in t["threads"]}
    for name, n in (("hot", 1), ("pool", 2), ('q"uote', 1)):
        th = by.get(name)
        assert th is not None, (name, list(by))
        assert th["nthreads"] == n and th["nexited"] == n, th
        # every malloc of the loop is served through the cache (plus a few of libc's)
        assert n * (PER_THREAD + 1) <= th["nrequests"] < n * PER_THREAD + 1000, th
        assert th["nfilled"] > 0, th
    main_name = os.path.basename(prog)[:15]
    assert by.get(main_name, {}).get("nexited") == 0, by.get(main_name)
    # arena_exclusive: the workload itself checks where "hot" ran
    run(prog, "exclusive", conf=",arena_exclusive:hot|other")
    print("ctl.threads: passed")


if __name__ == "__main__":
    main()
