#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tessera tune end to end (quick: 2 runs each).

    tune_test.py TESSERA_TUNE LIBTESSERA LARGEHOT TWO_PROBLEMS SCRATCH CASE
end_to_end: largehot (a hot 24 KiB size) under tcache_max:16384: tune must advise
tcache_max:24576, measure both configurations, print the table and a verdict, and write
the report (report.md, chart.svg, stats.json with the run's data, runs.csv).
per_finding: two_problems (the bins and tcache_max rules at once): tune must measure all
the findings together and each alone in the same rounds, and say per finding whether it
is kept (which it is depends on the machine: only the structure is asserted).
selection: tune's choice among findings on made-up measurements (deterministic): a
finding that beats the noise is kept, one that does not or that makes wall time worse is
dropped, and findings kept alone but not together fall back to the best one.
no_program / bad_lib: a clear one-line message and exit status 2.
"""
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys


def tune(tool, args, env_extra=None):
    env = dict(os.environ)
    env.pop("TESSERA_LIB", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, tool] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=50)


def tune_with_report(tool, lib, prog, arg, scratch, name):
    """tessera tune --runs 2 --goal speed on prog under tcache_max:16384, with a report in
    scratch/name; returns (stdout, report directory) after checking it succeeded."""
    report = os.path.join(scratch, name)
    shutil.rmtree(report, ignore_errors=True)
    res = tune(tool, ["--runs", "2", "--goal", "speed", "--lib", lib, "--report", report, "--",
                      prog, arg], {"TESSERA_CONF": "tcache_max:16384"})
    assert res.returncode == 0, "exit %d\n%s\n%s" % (res.returncode, res.stdout, res.stderr)
    return res.stdout, report


def end_to_end(tool, lib, prog, scratch):
    out, report = tune_with_report(tool, lib, prog, "200000", scratch, "report")
    assert "1. [tcache_max] Hot large sizes miss the thread cache" in out, out
    assert "\nTESSERA_CONF=tcache_max:24576\n" in out, out
    assert out.count("run ") == 4, "expected 2 before + 2 after runs\n" + out
    for metric in ("| wall time |", "| CPU time (user+sys) |", "| peak RSS |"):
        assert metric in out, out
    assert "Keep the advice" in out or "Advice not kept" in out, out
    for name in ("report.md", "chart.svg", "stats.json", "runs.csv"):
        path = os.path.join(report, name)
        assert os.path.isfile(path) and os.path.getsize(path) > 0, path
    with open(os.path.join(report, "stats.json")) as fh:
        doc = json.load(fh)
    assert doc["tessera"]["options"]["tcache_max"] == 16384, doc["tessera"]["options"]
    assert doc["run"]["cpu_s"] > 0 and doc["run"]["maxrss_kib"] > 0, doc["run"]
    with open(os.path.join(report, "runs.csv")) as fh:
        rows = fh.read().splitlines()
    assert rows[0].startswith("config,run,") and len(rows) == 5, rows
    with open(os.path.join(report, "chart.svg")) as fh:
        assert "<svg" in fh.read()
    with open(os.path.join(report, "report.md")) as fh:
        md = fh.read()
    assert "## Conclusion" in md and "tcache_max:24576" in md, md


def per_finding(tool, lib, prog, scratch):
    out, report = tune_with_report(tool, lib, prog, "300", scratch, "report-two")
    assert "1. [bins]" in out and "2. [tcache_max]" in out, out
    assert "each finding alone" in out, out
    assert "Finding 1 alone [bins]" in out and "Finding 2 alone [tcache_max]" in out, out
    for line in ("1. [bins] slab_sizes:1024-1024:16: ", "2. [tcache_max] tcache_max:24576: "):
        found = [l for l in out.splitlines() if l.startswith(line)]
        assert len(found) == 1 and found[0][len(line):].startswith(("kept: ", "dropped: ")), out
    with open(os.path.join(report, "runs.csv")) as fh:
        labels = [row.split(",")[0] for row in fh.read().splitlines()[1:]]
    for label in ("before", "after", "finding-1", "finding-2"):
        assert labels.count(label) == 2, labels
    kept = [l for l in out.splitlines() if l.startswith("TESSERA_CONF=")]
    if "Keep the advice" in out:
        assert len(kept) == 2 and kept[-1] != "TESSERA_CONF=", out
    with open(os.path.join(report, "report.md")) as fh:
        assert "Per finding" in fh.read()


def load_tune(tool):
    loader = importlib.machinery.SourceFileLoader("tessera_tune_under_test", tool)
    spec = importlib.util.spec_from_loader("tessera_tune_under_test", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def selection(tool):
    mod = load_tune(tool)
    advisor = mod.load_advisor()

    def advice_of(*changes):
        a = advisor.Advice("speed", {})
        for i, c in enumerate(changes):
            a.findings.append(advisor.Finding("rule%d" % i, "t", [], c, "e"))
        return a

    def runs(cpu, wall=1.0):
        return [{"wall_s": wall + d, "cpu_s": cpu + d, "maxrss_mib": 10.0, "minflt": 0}
                for d in (0.0, 0.001, 0.002, 0.003, 0.004)]

    def check(changes, fake, want_conf, want_second=False):
        """fake: label -> runs; "kept" answers the second pass."""
        calls = []

        def measure(argv, lib, confs, n, progress):
            calls.append([label for label, _ in confs])
            return {label: fake[label] for label, _ in confs}

        mod.measure = measure
        ev = mod.evaluate(advice_of(*changes), ["prog"], "lib", "", 5, "speed", io.StringIO(), None)
        assert ev.final_conf == want_conf, (ev.final_conf, want_conf, calls)
        assert (len(calls) == 2) == want_second, calls
        return ev

    a, b = {"a": "1"}, {"b": "2"}
    # A single finding: before and after only.
    check([a], {"before": runs(1.0), "after": runs(0.8)}, "a:1")
    check([a], {"before": runs(1.0), "after": runs(1.0)}, "")
    # Saves CPU but makes the program wait longer: dropped for speed.
    check([a], {"before": runs(1.0), "after": runs(0.8, wall=1.5)}, "")
    # Two findings, one helps and one does nothing: only the one that helps.
    check([a, b], {"before": runs(1.0), "after": runs(0.8), "finding-1": runs(0.8),
                   "finding-2": runs(1.0)}, "a:1")
    # Both help, together too: both, no second pass.
    check([a, b], {"before": runs(1.0), "after": runs(0.7), "finding-1": runs(0.8),
                   "finding-2": runs(0.9)}, "a:1,b:2")
    # Both help alone but not together: the better one alone.
    check([a, b], {"before": runs(1.0), "after": runs(1.0), "finding-1": runs(0.9),
                   "finding-2": runs(0.8)}, "b:2")
    # Three findings, two help, the combination of those two is measured again.
    c = {"c": "3"}
    ev = check([a, b, c], {"before": runs(1.0), "after": runs(1.2), "finding-1": runs(0.9),
                           "finding-2": runs(1.1), "finding-3": runs(0.9),
                           "before-kept": runs(1.0), "kept": runs(0.8)}, "a:1,c:3", want_second=True)
    lines = mod.finding_lines(ev, "speed")
    assert lines[0].startswith("1. [rule0] a:1: kept") and lines[1].startswith("2. [rule1] b:2: dropped: CPU"), lines
    # Nothing helps: nothing kept.
    check([a, b], {"before": runs(1.0), "after": runs(1.0), "finding-1": runs(1.0),
                   "finding-2": runs(1.1)}, "")


def no_program(tool, lib):
    res = tune(tool, ["--lib", lib, "--", "/nonexistent/program"])
    lines = res.stderr.splitlines()
    assert res.returncode == 2 and len(lines) == 1, (res.returncode, res.stderr)
    assert lines[0].startswith("tessera tune: cannot run /nonexistent/program"), lines


def bad_lib(tool, prog):
    res = tune(tool, ["--lib", "/nonexistent/libtessera.so", "--", prog, "10"])
    assert res.returncode == 2 and res.stderr == "tessera tune: library not found: /nonexistent/libtessera.so\n", res.stderr
    res = tune(tool, ["--", prog, "10"], {"TESSERA_LIB": "/nonexistent/lib.so"})
    assert res.returncode == 2 and "TESSERA_LIB names no file" in res.stderr, res.stderr


def main():
    tool, lib, prog, two, scratch, case = sys.argv[1:7]
    os.makedirs(scratch, exist_ok=True)
    if case == "end_to_end":
        end_to_end(tool, lib, prog, scratch)
    elif case == "per_finding":
        per_finding(tool, lib, two, scratch)
    elif case == "selection":
        selection(tool)
    elif case == "no_program":
        no_program(tool, lib)
    elif case == "bad_lib":
        bad_lib(tool, prog)
    else:
        raise SystemExit("unknown case " + case)
    print(case + ": ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
