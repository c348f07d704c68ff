# SPDX-License-Identifier: MIT
"""Allocation-heavy Python workload for programs.python3: dicts, strings, lists, tuples,
sets, deletion and regrowth. Prints a checksum that depends only on the computation (no
addresses, no hash-seed-dependent iteration order), plus whether libtessera is mapped."""
import hashlib
import sys


def words(n):
    syll = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zen", "dor", "ix"]
    x = 12345
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        yield "".join(syll[(x >> (4 * k)) % len(syll)] for k in range(1 + x % 5))


def main():
    digest = hashlib.sha256()

    # Dicts of lists of strings, grown, mutated and partly deleted.
    index = {}
    for i, w in enumerate(words(300000)):
        index.setdefault(w, []).append(i)
    for w in list(index)[::3]:
        del index[w]
    for w in sorted(index):
        digest.update(w.encode())
        digest.update(str(len(index[w])).encode())

    # Strings: concatenation, join, split, replace, formatting.
    text = " ".join(f"{w}:{len(w)}" for w in words(100000))
    parts = text.replace(":", "=").split(" ")
    digest.update(str(len(parts)).encode())
    digest.update(hashlib.sha256(text.encode()).digest())
    big = ""
    for i in range(20000):
        big += chr(97 + i % 26) * (i % 7)
    digest.update(big.encode())

    # Lists of tuples, sorting, slicing, nested comprehensions.
    rows = [(i % 97, str(i), [i] * (i % 5)) for i in range(200000)]
    rows.sort(key=lambda r: (r[0], r[1]))
    digest.update(repr(rows[:50]).encode())
    digest.update(repr(rows[-50:]).encode())
    matrix = [[(i * j) % 101 for j in range(300)] for i in range(300)]
    digest.update(str(sum(map(sum, matrix))).encode())

    # Sets and dict churn: many short-lived objects.
    total = 0
    for round_ in range(30):
        d = {f"k{round_}-{i}": list(range(i % 10)) for i in range(20000)}
        s = {v for v in d if v.endswith("7")}
        total += len(s) + sum(len(v) for v in d.values())
    digest.update(str(total).encode())

    # Bytes and bytearrays of growing sizes (large blocks, realloc).
    buf = bytearray()
    for i in range(2000):
        buf += bytes([i % 256]) * (i * 13 % 4096)
    digest.update(hashlib.sha256(buf).digest())
    chunks = [bytes(2 ** k) for k in range(10, 25)]
    digest.update(str(sum(len(c) for c in chunks)).encode())

    with open("/proc/self/maps") as maps:
        on_tessera = "libtessera" in maps.read()
    print("allocator:", "tessera" if on_tessera else "system")
    print("checksum:", digest.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
