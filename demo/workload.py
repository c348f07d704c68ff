# SPDX-License-Identifier: MIT
"""The python3 workload of demo/run: allocation-heavy work on dicts, strings and lists
(build records, index their words, round-trip them through JSON, churn and sort them).
Prints a summary and a digest of everything it built; deterministic for a given scale.
    python3 demo/workload.py RECORDS"""
import collections
import hashlib
import json
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 150_000
rnd = random.Random(2026)
letters = "abcdefghijklmnopqrstuvwxyz"
words = ["".join(rnd.choices(letters, k=rnd.randint(2, 12))) for _ in range(20_000)]
digest = hashlib.sha256()

# Records: a dict each, holding strings, a list and a nested dict.
records = []
for i in range(n):
    title = " ".join(rnd.choices(words, k=rnd.randint(3, 15)))
    records.append({
        "id": i,
        "title": title,
        "tags": rnd.sample(words, rnd.randint(1, 6)),
        "meta": {"score": rnd.randint(0, 10**6), "slug": title.replace(" ", "-")[:40]},
    })

# An inverted index: word -> ids, and word counts.
index = collections.defaultdict(list)
for r in records:
    for word in r["title"].split():
        index[word].append(r["id"])
counts = collections.Counter({word: len(ids) for word, ids in index.items()})
print("records", len(records), "distinct words", len(index))
print("top words", counts.most_common(5))

# JSON round trip in chunks: many short-lived strings and dicts.
total = 0
for start in range(0, n, 5_000):
    blob = json.dumps(records[start:start + 5_000], sort_keys=True)
    total += len(blob)
    digest.update(blob.encode())
    back = json.loads(blob)
    assert back[0]["id"] == start
print("json bytes", total)

# Churn: drop two thirds, grow the rest with longer strings and lists.
records = [r for r in records if r["id"] % 3 == 0]
for r in records:
    r["title"] = (r["title"] + " ") * 3
    r["tags"] = r["tags"] * 4 + [t.upper() for t in r["tags"]]
    r["meta"]["history"] = [r["meta"]["score"] >> k for k in range(8)]
records.sort(key=lambda r: (r["meta"]["score"], r["id"]))
for r in records:
    digest.update(r["title"].encode())
    digest.update(",".join(r["tags"]).encode())
print("kept", len(records), "lowest", [r["id"] for r in records[:5]])

# Strings: join, split, format, dedupe.
text = "\n".join(f"{r['id']}:{r['meta']['slug']}:{len(r['tags'])}" for r in records)
lines = sorted(set(text.split("\n")), key=len)
digest.update("".join(lines).encode())
print("lines", len(lines), "longest", len(lines[-1]))
print("digest", digest.hexdigest())
