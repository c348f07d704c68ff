# A program that holds more memory than expected: a cache that keeps every parsed
# record, and a report that builds a large temporary list.
import ctypes
import json
import time

cache = {}

def parse(i):
    return json.loads('{"id": %d, "tags": ["a", "b", "c"], "payload": "%s"}' % (i, "x" * 200))

def load(n):
    for i in range(n):
        cache[i] = parse(i)

def report():
    lines = ["%d:%s" % (k, v["payload"]) for k, v in cache.items()]
    return sum(len(line) for line in lines)

def heap_dump():
    """Under tessera with prof:true: write a heap profile now (prof.dump)."""
    ctypes.CDLL(None).mallctl(b"prof.dump", None, None, None, 0)

load(150000)
heap_dump()
time.sleep(0.3)
print(report())
time.sleep(0.3)
cache.clear()
time.sleep(0.3)
