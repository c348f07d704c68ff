# SPDX-License-Identifier: MIT
# json loads/dumps + dict/list churn + dataclasses + re
import json, sys, re, hashlib
from dataclasses import dataclass, asdict
@dataclass
class Rec:
    id: int; name: str; group: str; score: float; tags: list
with open(sys.argv[1]) as f: data = json.load(f)
recs = [Rec(d["id"], d["name"], d["group"], d["score"], d["tags"]) for d in data]
groups = {}
for r in recs: groups.setdefault(r.group, []).append(r)
summary = {g: {"n": len(v), "sum": round(sum(r.score for r in v), 3), "tags": sorted({t for r in v for t in r.tags})[:5]} for g, v in groups.items()}
s = json.dumps([asdict(r) for r in recs if r.score > 500], sort_keys=True)
pat = re.compile(r'"name": "item-(\d{3})')
hits = {}
for m in pat.finditer(s): hits[m.group(1)] = hits.get(m.group(1), 0) + 1
s2 = json.dumps(summary, sort_keys=True)
back = json.loads(s)
print(len(s), len(back), len(hits), hashlib.md5(s2.encode()).hexdigest())
