-- SPDX-License-Identifier: MIT
-- sqlite: @ROWS@ rows, index build, join, GROUP BY, window function (bench/real/run substitutes @ROWS@)
PRAGMA cache_size = -200000;
CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, k TEXT, v REAL);
CREATE TABLE u(g INTEGER PRIMARY KEY, name TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < @ROWS@)
INSERT INTO t SELECT i, (i * 7919) % 5000, printf('key-%08d', (i * 104729) % 1000003), ((i * 31337) % 100000) / 7.0 FROM c;
INSERT INTO u SELECT DISTINCT g, printf('group-%d', g) FROM t;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_gv ON t(g, v);
SELECT count(*), sum(length(k)) FROM t WHERE k > 'key-0050' AND k < 'key-0060';
SELECT u.name, count(*), round(avg(t.v), 3) FROM t JOIN u USING(g) GROUP BY u.name ORDER BY 2 DESC, 1 LIMIT 5;
SELECT g, round(sum(v), 2) FROM (SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v DESC) rn FROM t) WHERE rn <= 3 GROUP BY g ORDER BY 2 DESC LIMIT 5;
SELECT count(DISTINCT substr(k, 5, 5)) FROM t;
