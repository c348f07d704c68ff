-- sqlite3 sorting: index builds, a join with GROUP BY and a window function over a
-- generated in-memory table (bench/run substitutes @ROWS@). SQLite's sorter keeps its
-- records in one buffer that it grows by realloc, doubling up to tens of MiB, and frees
-- after each sort: how an allocator places and reuses big blocks that grow.
PRAGMA cache_size = -200000;
CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, k TEXT, v REAL);
CREATE TABLE u(g INTEGER PRIMARY KEY, name TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < @ROWS@)
INSERT INTO t SELECT i, (i * 7919) % 5000, printf('key-%08d', (i * 104729) % 1000003), ((i * 31337) % 100000) / 7.0 FROM c;
INSERT INTO u SELECT DISTINCT g, printf('group-%d', g) FROM t;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_gv ON t(g, v);
SELECT 'range', count(*), sum(length(k)) FROM t WHERE k > 'key-0050' AND k < 'key-0060';
SELECT 'join', u.name, count(*), round(avg(t.v), 3) FROM t JOIN u USING(g) GROUP BY u.name ORDER BY 3 DESC, 2 LIMIT 3;
SELECT 'window', g, round(sum(v), 2) FROM (SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v DESC) rn FROM t)
  WHERE rn <= 3 GROUP BY g ORDER BY 3 DESC LIMIT 3;
SELECT 'RESULT rows=' || count(*) || ' checksum=' || count(DISTINCT substr(k, 5, 5)) FROM t;
