#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tessera advise on recorded statistics: each case asserts the findings (rule names) and
the final TESSERA_CONF line (or its absence).

    advise_test.py TESSERA_ADVISE DATA_DIR CASE
The documents in DATA_DIR were recorded by `bench/tune/run --record DATA_DIR` (the bench/tune
program of each rule with the configuration that builds its problem), except
exclusive.json: the arenas document with the per-thread section and thread peak that the
library does not print yet, added by hand to exercise the exclusive-arena rule.
"""
import json
import os
import subprocess
import sys
import tempfile

# case: (document, goal, expected rules in order, expected TESSERA_CONF or None, extra text)
CASES = {
    "arenas": ("arenas.json", "speed", ["arenas"], "narenas:4", "not enough data"),
    # bench/tune/hotclass.c: batches of 1500 blocks of 1000 B, beyond what a cache bin
    # grows to, in 16-region slabs: 32 slabs per fill.
    "bins": ("bins.json", "speed", ["bins"], "slab_sizes:1024-1024:16", "at the limit"),
    "bins_memory": ("bins.json", "memory", [], None, "not applied for goal memory"),
    # The arenas document of a library that prints ncpus: narenas:1 on 2 CPUs, 9 threads.
    "arenas_cpus": ("arenas-cpus.json", "speed", ["arenas"], "narenas:2", "capped at one arena per CPU"),
    "decay": ("decay.json", "speed", ["decay"], "dirty_decay_ms:5000", "minor page faults"),
    "decay_no_run": ("decay.json", "balanced", ["decay"], "dirty_decay_ms:5000", "inferred from the turnover"),
    "tcache_max": ("tcache_max.json", "speed", ["tcache_max"], "tcache_max:24576", None),
    "fragmentation": ("fragmentation.json", "memory", ["fragmentation"],
                      "slab_sizes:64-64:1,dirty_decay_ms:0", None),
    "fragmentation_balanced": ("fragmentation.json", "balanced", [], None, None),
    "healthy": ("healthy.json", None, [], None, None),
    "exclusive": ("exclusive.json", "speed", ["arenas", "exclusive"],
                  "narenas:8,arena_exclusive:net-0|net-1", None),
    # Workloads of the benchmark suite (bench/tune/suite) where an earlier rule advised
    # something that measured worse. churn-64: 64 threads on 2 CPUs, 0.4% of the arena
    # lock acquisitions contended but 6 s waited in all (the holders preempted):
    # narenas:46 cost +13% CPU and +132% peak RSS. Now nothing.
    "suite_churn64": ("suite-churn-64.json", None, [], None, None),
    # threads-1000: 0.3% contended; narenas:49 tripled peak RSS. The old bins rule's
    # advice (slab_sizes:512-512:16,tcache_nslots_small_max:800) measured no better: its
    # fills move 2 blocks each, nothing bigger slabs would save.
    "suite_threads1000": ("suite-threads-1000.json", "balanced", [], None, None),
    # prodcons: one thread allocates, another frees; 2.8% of the acquisitions waited, and
    # 5,908 contended acquisitions at 10 us would be 67% of the 0.09 s of CPU, but they
    # waited 11 ms in all. narenas:3 doubled CPU and wall time: the consumer's frees go
    # back to the producer's arena whatever the number of arenas.
    "suite_prodcons": ("suite-prodcons.json", "speed", [], None, "would not separate them"),
    # workingset: one worker thread computes while the main thread waits in pthread_join;
    # at load 9 the worker waited 0.2 s of the 0.33 s for a CPU. Counting only the main
    # thread's wait (0.02 s) it looked idle, and background_thread cost 1.4% CPU time.
    "suite_workingset": ("suite-workingset.json", None, [], None, None),
    # js (duktape): CPU-bound, but busy 47% of its wall time at load 14; background_thread
    # cost +11% wall and +3% CPU. Discounting the main thread's wait for a CPU, busy.
    "suite_js": ("suite-js.json", None, [], None, None),
    # peak-idle: 168 MiB free in one arena after the frees, idle 2 s: background_thread
    # cost 3% wall time and lowered nothing, since an arena holding background_thread_auto
    # (64 MiB) unused starts the thread by itself.
    "suite_peakidle": ("suite-peak-idle.json", None, [], None, None),
    # stl, goal memory: at exit 76 KiB allocated of 52 MiB resident, 1,168 slabs of the
    # 80-byte class pinned by 0.8% of their regions. slab_sizes:80-80:1,dirty_decay_ms:0
    # cost 16% CPU and 1.8% peak RSS: what the exit leaves is not the peak.
    "suite_stl": ("suite-stl.json", "memory", [], None, "not the peak"),
}


def run_advise(tool, path, goal):
    argv = [sys.executable, tool, path] + (["--goal", goal] if goal else [])
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rules_of(stdout):
    rules = []
    for line in stdout.splitlines():
        if line[:1].isdigit() and ". [" in line:
            rules.append(line.split("[", 1)[1].split("]", 1)[0])
    return rules


def conf_of(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("TESSERA_CONF=")]
    assert len(lines) <= 1, "more than one TESSERA_CONF line"
    if lines:
        assert stdout.rstrip().splitlines()[-1] == lines[0], "TESSERA_CONF is not the last line"
        return lines[0][len("TESSERA_CONF="):]
    return None


def check_case(tool, data, case):
    doc, goal, want_rules, want_conf, want_text = CASES[case]
    path = os.path.join(data, doc)
    if case == "decay_no_run":  # the document as the library prints it, without tune's run data
        with open(path) as fh:
            d = json.load(fh)
        d.pop("run", None)
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(d, tmp)
        tmp.close()
        path = tmp.name
    goals = [goal] if goal else ["speed", "memory", "balanced"]
    for g in goals:
        res = run_advise(tool, path, g)
        assert res.returncode == 0, "exit %d: %s" % (res.returncode, res.stderr)
        got_rules, got_conf = rules_of(res.stdout), conf_of(res.stdout)
        assert got_rules == want_rules, "goal %s: rules %r, expected %r\n%s" % (g, got_rules, want_rules, res.stdout)
        assert got_conf == want_conf, "goal %s: conf %r, expected %r\n%s" % (g, got_conf, want_conf, res.stdout)
        if want_rules:
            assert res.stdout.count("   evidence: ") >= len(want_rules), res.stdout
            assert res.stdout.count("   expect:   ") == len(want_rules), res.stdout
        else:
            assert "No change advised" in res.stdout, res.stdout
        if want_text:
            assert want_text in res.stdout, "%r not in output\n%s" % (want_text, res.stdout)
    print("%s: %s" % (case, "ok"))


def check_bad_input(tool):
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, want in (("empty.json", "{}", "holds no tessera JSON statistics"),
                                 ("schema.json", '{"tessera": {"schema": 1}}', "schema 1 is not supported"),
                                 ("nobins.json", '{"tessera": {"schema": 2, "options": {}, "stats": {}, "arenas": {}}}',
                                  "arenas.merged")):
            path = os.path.join(tmp, name)
            with open(path, "w") as fh:
                fh.write(text)
            res = run_advise(tool, path, None)
            assert res.returncode == 2, (name, res.returncode)
            assert res.stdout == "", res.stdout
            lines = res.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("tessera advise: ") and want in lines[0], res.stderr
        res = run_advise(tool, os.path.join(tmp, "missing.json"), None)
        assert res.returncode == 2 and "cannot read" in res.stderr, res.stderr
        res = run_advise(tool, os.path.join(tmp, "empty.json"), "fast")
        assert res.returncode == 2 and "invalid choice" in res.stderr, res.stderr
    print("bad_input: ok")


def check_stderr_mixed(tool, data):
    """A program's own stderr (with braces) around the JSON: the statistics are still found."""
    with open(os.path.join(data, "tcache_max.json")) as fh:
        doc = json.load(fh)
    doc.pop("run", None)
    text = 'log: {"not": "stats"}\nwarning { unbalanced\n' + json.dumps(doc, indent=1) + "\nbye {}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as tmp:
        tmp.write(text)
    res = run_advise(tool, tmp.name, "speed")
    os.unlink(tmp.name)
    assert res.returncode == 0, res.stderr
    assert conf_of(res.stdout) == "tcache_max:24576", res.stdout
    print("stderr_mixed: ok")


def check_exclusive_by_name(tool, data):
    """Threads summed under one name (the library's nthreads): judged per thread, so a
    pool of 8 ordinary threads is not hot while one busy thread is; the process is named."""
    with open(os.path.join(data, "exclusive.json")) as fh:
        doc = json.load(fh)
    doc["tessera"]["pid"], doc["tessera"]["cmdline"] = 4242, "server --port 1"
    doc["tessera"]["threads"] = [
        {"name": "pool", "nthreads": 8, "nrequests": 8 * 300000, "nfilled": 1, "nflushed": 1},
        {"name": "net", "nthreads": 1, "nrequests": 3000000, "nfilled": 1, "nflushed": 1}]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(doc, tmp)
    res = run_advise(tool, tmp.name, "speed")
    os.unlink(tmp.name)
    assert res.returncode == 0, res.stderr
    assert "arena_exclusive:net" in conf_of(res.stdout) and "pool" not in conf_of(res.stdout), res.stdout
    assert "process 4242: server --port 1" in res.stdout, res.stdout
    print("exclusive_by_name: ok")


def check_arenas_capped(tool, data):
    """Real contention (10% of acquisitions waited) under narenas:0 with 46 threads at
    once: narenas stops at 4x the arenas of one per CPU (2 here), not at the thread peak."""
    with open(os.path.join(data, "suite-churn-64.json")) as fh:
        doc = json.load(fh)
    for b in doc["tessera"]["arenas"]["merged"]["bins"]:
        if "lock" in b:
            b["lock"]["num_wait"] = b["lock"]["num_ops"] // 10
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(doc, tmp)
    res = run_advise(tool, tmp.name, "speed")
    os.unlink(tmp.name)
    assert res.returncode == 0, res.stderr
    assert rules_of(res.stdout)[:1] == ["arenas"], res.stdout
    assert "narenas:8" in conf_of(res.stdout), res.stdout
    assert "capped at 4x the 2 arenas" in res.stdout, res.stdout
    print("arenas_capped: ok")


def check_arenas_explicit_cap(tool, data):
    """narenas set explicitly (4) on 2 CPUs with 64 threads at once and 10% of the
    acquisitions contended: the advice stops at 4 arenas per CPU (8), not at the peak."""
    with open(os.path.join(data, "arenas-cpus.json")) as fh:
        doc = json.load(fh)
    t = doc["tessera"]
    t["options"]["narenas"], t["arenas"]["narenas"], t["arenas"]["nthreads_peak"] = 4, 4, 64
    assert t["ncpus"] == 2, t["ncpus"]
    for b in t["arenas"]["merged"]["bins"]:
        if "lock" in b:
            b["lock"]["num_wait"] = b["lock"]["num_ops"] // 10
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(doc, tmp)
    res = run_advise(tool, tmp.name, "speed")
    assert res.returncode == 0, res.stderr
    assert conf_of(res.stdout) == "narenas:8", res.stdout
    assert "capped at 4 arenas per CPU (2 CPUs)" in res.stdout, res.stdout
    # Below the CPU count, a little contention is enough, and the advice is one per CPU.
    t["options"]["narenas"], t["arenas"]["narenas"], t["ncpus"] = 1, 1, 8
    for b in t["arenas"]["merged"]["bins"]:
        if "lock" in b:
            b["lock"]["num_wait"] = b["lock"]["num_ops"] // 200
    with open(tmp.name, "w") as fh:
        json.dump(doc, fh)
    res = run_advise(tool, tmp.name, "speed")
    os.unlink(tmp.name)
    assert conf_of(res.stdout) == "narenas:8", res.stdout
    assert "threshold 0.2% with fewer arenas than CPUs" in res.stdout, res.stdout
    print("arenas_explicit_cap: ok")


def check_workingset_main_thread_only(tool, data):
    """The same document with the main thread's wait alone (what tune recorded before it
    followed every thread): judged idle, background_thread advised. Shows what the
    threads' wait changes."""
    with open(os.path.join(data, "suite-workingset.json")) as fh:
        doc = json.load(fh)
    doc["run"]["run_delay_s"] = 0.02
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(doc, tmp)
    res = run_advise(tool, tmp.name, "balanced")
    os.unlink(tmp.name)
    assert rules_of(res.stdout) == ["background"], res.stdout
    assert "less the 0.02 s its threads waited for a CPU" in res.stdout, res.stdout
    print("workingset_main_thread_only: ok")


def main():
    tool, data, case = sys.argv[1:4]
    if case == "bad_input":
        check_bad_input(tool)
    elif case == "exclusive_by_name":
        check_exclusive_by_name(tool, data)
    elif case == "arenas_capped":
        check_arenas_capped(tool, data)
    elif case == "workingset_main_thread_only":
        check_workingset_main_thread_only(tool, data)
    elif case == "arenas_explicit_cap":
        check_arenas_explicit_cap(tool, data)
    elif case == "stderr_mixed":
        check_stderr_mixed(tool, data)
    else:
        check_case(tool, data, case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
