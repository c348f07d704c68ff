# SPDX-License-Identifier: MIT
# programs.sqlite3: the sqlite3 shell under tessera inserts 100,000 rows into a file database,
# builds an index and runs aggregate, join, sort and string queries. The results must equal
# the known answers (computed in closed form below) and the output of the same run without
# tessera. The sqlite3 process itself checks its memory map for libtessera.
source "$(dirname "$0")/common.sh"
SQLITE=$(command -v sqlite3 || true)
[ -n "$SQLITE" ] || die "sqlite3 not found (apt-get install sqlite3)"

cat > "$SCRATCH/work.sql" <<'SQL'
.shell grep -q libtessera /proc/$PPID/maps && echo "allocator: tessera" || echo "allocator: system"
PRAGMA journal_mode = WAL;
CREATE TABLE items(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, payload BLOB);
WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq WHERE x < 100000)
INSERT INTO items SELECT x, x % 97, printf('name-%06d', x), zeroblob(x % 500) FROM seq;
CREATE INDEX items_by_name ON items(name);
CREATE TABLE groups(grp INTEGER PRIMARY KEY, label TEXT);
WITH RECURSIVE g(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM g WHERE x < 96)
INSERT INTO groups SELECT x, 'group-' || x FROM g;
SELECT 'count', count(*) FROM items;
SELECT 'sum', sum(id), sum(length(payload)) FROM items;
SELECT 'group 5', count(*), min(id), max(id) FROM items WHERE grp = 5;
SELECT 'by name', id FROM items WHERE name = 'name-054321';
SELECT 'join', count(*) FROM items JOIN groups USING (grp) WHERE label = 'group-42';
SELECT 'top', id, name FROM items ORDER BY length(payload) DESC, id DESC LIMIT 3;
SELECT 'distinct', count(DISTINCT substr(name, 1, 8)) FROM items;
DELETE FROM items WHERE id % 2 = 0;
UPDATE items SET name = upper(name) WHERE id % 3 = 0;
SELECT 'after delete', count(*), sum(id) FROM items;
SELECT 'upper', count(*) FROM items WHERE name LIKE 'NAME-%' AND name GLOB 'NAME-*';
VACUUM;
SELECT 'integrity', integrity_check FROM pragma_integrity_check;
SQL

# Known answers, independent of any allocator.
{
  echo "allocator: tessera"
  echo "wal"
  echo "count|100000"
  # sum(x % 500) over 1..100000: 200 full cycles of 0..499 = 200 * 124750
  echo "sum|5000050000|$((200 * 124750))"
  # ids 5, 102, ..., the largest <= 100000 with id % 97 == 5
  echo "group 5|$(( (100000 - 5) / 97 + 1 ))|5|$(( 5 + (100000 - 5) / 97 * 97 ))"
  echo "by name|54321"
  echo "join|$(( (100000 - 42) / 97 + 1 ))"
  echo "top|99999|name-099999"
  echo "top|99499|name-099499"
  echo "top|98999|name-098999"
  # substr(name, 1, 8) is "name-000" .. "name-100"
  echo "distinct|101"
  # odd ids remain: 50000 of them, summing to 50000^2
  echo "after delete|50000|2500000000"
  # odd multiples of 3 up to 99999: 3, 9, ..., 99999
  echo "upper|16667"
  echo "integrity|ok"
} > "$SCRATCH/expected.out"

rm -f "$SCRATCH"/system.db* "$SCRATCH"/tessera.db*
"$SQLITE" -batch "$SCRATCH/system.db" < "$SCRATCH/work.sql" > "$SCRATCH/system.out" ||
  die "sqlite3 failed without tessera"
preloaded "$SQLITE" -batch "$SCRATCH/tessera.db" < "$SCRATCH/work.sql" > "$SCRATCH/tessera.out" ||
  die "sqlite3 under tessera exited with status $?"
same_output "$SCRATCH/expected.out" "$SCRATCH/tessera.out" "sqlite3"
sed 1d "$SCRATCH/system.out" > "$SCRATCH/system.rest"
sed 1d "$SCRATCH/tessera.out" > "$SCRATCH/tessera.rest"
same_output "$SCRATCH/system.rest" "$SCRATCH/tessera.rest" "sqlite3 (vs. system allocator)"
echo "programs.sqlite3: ok: $(wc -l < "$SCRATCH/tessera.out") result lines as expected"
