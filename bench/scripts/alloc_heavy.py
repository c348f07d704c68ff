# SPDX-License-Identifier: MIT
"""Workload 10c: an allocation-heavy Python program.

Run by bench/run as `python3 alloc_heavy.py ROUNDS RECORDS` with PYTHONMALLOC=malloc, so that every
object goes to the allocator under test (by default CPython serves objects up to 512 bytes
from its own pymalloc arenas and the allocator would only see arena-sized requests).
It builds and drops dicts, lists, tuples, strings, class instances and JSON documents:
the object churn of a typical web or data-processing script.
"""
import json
import sys


class Record:
    __slots__ = ("key", "tags", "score", "children")

    def __init__(self, key, tags, score):
        self.key = key
        self.tags = tags
        self.score = score
        self.children = []


def one_round(seed, n):
    x = seed
    records = {}
    for i in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        key = "k%x" % (x >> 20)
        rec = Record(key, [str(x % 97), str(x % 89)] * (1 + (x >> 60)), float(x % 1000) / 7)
        records[key] = rec
        if i % 3:
            parent = records.get("k%x" % ((x >> 24)), None)
            if parent is not None:
                parent.children.append(rec)
    # Text processing: split, join, format.
    text = " ".join(r.key + ":" + ",".join(r.tags) for r in records.values())
    words = text.split(" ")
    counts = {}
    for w in words:
        counts[w[:4]] = counts.get(w[:4], 0) + 1
    # JSON round trip of a nested document.
    doc = [{"k": r.key, "t": r.tags, "s": r.score, "c": len(r.children)} for r in records.values()]
    back = json.loads(json.dumps(doc))
    # Sorting with tuple keys, comprehension temporaries.
    ranked = sorted(((d["s"], d["k"]) for d in back), reverse=True)[:100]
    return len(records) + len(counts) + len(back) + len(ranked)


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    records = int(sys.argv[2]) if len(sys.argv) > 2 else 60000
    checksum = 0
    for r in range(scale):
        checksum += one_round(r + 1, records)
    print("python: %d rounds, checksum %d" % (scale, checksum))
    print("RESULT checksum=%d" % checksum)


main()
