#!/bin/bash
# SPDX-License-Identifier: MIT
# Real programs profiled through the launcher: `tessera --profile heap -- COMMAND` on
# Debian's python3 (PYTHONMALLOC=malloc, so that its objects come from malloc) and
# sqlite3, both built without frame pointers and both freeing everything before they
# exit. The summary's "allocated since start" section must name each program's own
# functions (a Py/_Py function, a sqlite3 function), found by the CFI unwinder and
# symbolized from the dynamic symbol tables; the launcher prints it.
# $1 the build-tree launcher  $2 scratch dir. Skipped (77) without /usr/bin/python3 or
# sqlite3 (apt-get install python3 sqlite3).
set -eu
launcher=$1 dir=$2
python=/usr/bin/python3 sqlite=$(command -v sqlite3 || true)
[ -x "$python" ] && [ -n "$sqlite" ] || { echo "skipped: needs Debian's python3 and sqlite3"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir/py" "$dir/sql"

# The section of a summary that lists sites by bytes allocated.
allocated_section() { sed -n '/^== allocated since start/,$p' "$1"; }

cd "$dir/py"
PYTHONMALLOC=malloc "$launcher" --profile heap -- "$python" -c '
import json
rows = [json.dumps({"key%d" % i: list(range(40))}) for i in range(30000)]
print(len(rows))' >out.txt 2>err.txt
grep -qx 30000 out.txt
grep -q '^tessera: top allocation sites' err.txt
summary=$(ls tessera-prof.*.summary.txt)
allocated_section "$summary" | grep -Eq '^    _?Py[A-Za-z_]+\+0x[0-9a-f]+ \(python3' ||
  { echo "python3: no Py function among the allocation sites"; cat "$summary"; exit 1; }
grep -Eq '^    _?Py[A-Za-z_]+\+0x' err.txt || { echo "python3: the launcher printed no Py function"; cat err.txt; exit 1; }
echo "python3: $(allocated_section "$summary" | grep -Ec '^    _?Py') Py frames among the sites: ok"

cd "$dir/sql"
cat >work.sql <<'SQL'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 100000)
INSERT INTO t SELECT x, printf('row-%08d', x) FROM s;
CREATE INDEX tb ON t(b);
SELECT count(*) FROM t;
SQL
"$launcher" --profile heap -- "$sqlite" :memory: <work.sql >out.txt 2>err.txt
grep -qx 100000 out.txt
summary=$(ls tessera-prof.*.summary.txt)
allocated_section "$summary" | grep -Eq '^    sqlite3[A-Za-z_]*\+0x[0-9a-f]+ \(libsqlite3' ||
  { echo "sqlite3: no sqlite3 function among the allocation sites"; cat "$summary"; exit 1; }
echo "sqlite3: $(allocated_section "$summary" | grep -Ec '^    sqlite3') sqlite3 frames among the sites: ok"
