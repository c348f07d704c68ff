#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tessera tune end to end (quick: 2 runs each).

    tune_test.py TESSERA_TUNE LIBTESSERA LARGEHOT SCRATCH CASE
end_to_end: largehot (a hot 24 KiB size) under tcache_max:16384: tune must advise
tcache_max:24576, measure both configurations, print the table and a verdict, and write
the report (report.md, chart.svg, stats.json with the run's data, runs.csv).
no_program / bad_lib: a clear one-line message and exit status 2.
"""
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


def end_to_end(tool, lib, prog, scratch):
    report = os.path.join(scratch, "report")
    shutil.rmtree(report, ignore_errors=True)
    res = tune(tool, ["--runs", "2", "--goal", "speed", "--lib", lib, "--report", report, "--",
                      prog, "200000"], {"TESSERA_CONF": "tcache_max:16384"})
    out = res.stdout
    assert res.returncode == 0, "exit %d\n%s\n%s" % (res.returncode, out, res.stderr)
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
    tool, lib, prog, scratch, case = sys.argv[1:6]
    os.makedirs(scratch, exist_ok=True)
    if case == "end_to_end":
        end_to_end(tool, lib, prog, scratch)
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
