-- Workload 10b: sqlite3 on a generated database (bench/run substitutes @ROWS@).
-- Built in memory so the run measures SQLite's work and its allocations, not the disk.
PRAGMA cache_size = -65536;
CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, val REAL, payload BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < @ROWS@)
INSERT INTO item SELECT x, hex(randomblob(4 + x % 20)), x % 997, (x * 7919 % 100003) / 7.0,
                        randomblob(x % 300) FROM c;
CREATE INDEX item_name ON item(name);
CREATE INDEX item_grp ON item(grp, val);
SELECT 'groups', count(*) FROM (SELECT grp, count(*), sum(val), max(name) FROM item GROUP BY grp);
SELECT 'join', count(*) FROM item a JOIN item b ON b.id = a.grp * 3 WHERE a.val > b.val;
SELECT 'sorted', length(group_concat(name)) FROM (SELECT name FROM item ORDER BY payload LIMIT 20000);
UPDATE item SET name = name || '-' || grp WHERE id % 3 = 0;
DELETE FROM item WHERE id % 5 = 0;
SELECT 'distinct', count(DISTINCT substr(name, 1, 3)) FROM item;
SELECT 'RESULT rows=' || count(*) || ' checksum=' || sum(length(name)) FROM item;
