# SPDX-License-Identifier: MIT
"""Writes the sqlite3 workload of demo/run to stdout: a shop with customers and orders,
inserted row by row in one transaction, then indexed, joined, grouped, updated and
deleted. Deterministic: the same scale always gives the same SQL and the same results.
    python3 demo/make_sql.py ORDERS > shop.sql"""
import random
import sys

orders = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
customers = max(orders // 15, 10)
rnd = random.Random(2026)
letters = "abcdefghijklmnopqrstuvwxyz"
cities = ["Lisbon", "Oslo", "Lagos", "Quito", "Hanoi", "Perth", "Tunis", "Riga", "Lima", "Pune"]
items = ["".join(rnd.choices(letters, k=rnd.randint(4, 14))) for _ in range(2000)]

out = sys.stdout
w = out.write
w("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, city TEXT, since INTEGER);\n")
w("CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, item TEXT, qty INTEGER,"
  " price REAL, note TEXT);\n")
w("BEGIN;\n")
for i in range(1, customers + 1):
    name = "".join(rnd.choices(letters, k=rnd.randint(5, 20))).capitalize()
    w(f"INSERT INTO customers VALUES({i},'{name}','{rnd.choice(cities)}',"
      f"{rnd.randint(1990, 2025)});\n")
for i in range(1, orders + 1):
    note = " ".join(rnd.choices(items, k=rnd.randint(1, 12)))
    w(f"INSERT INTO orders VALUES({i},{rnd.randint(1, customers)},'{rnd.choice(items)}',"
      f"{rnd.randint(1, 50)},{rnd.randint(99, 99999) / 100},'{note}');\n")
w("COMMIT;\n")
w("""CREATE INDEX orders_customer ON orders(customer);
CREATE INDEX orders_item ON orders(item, qty);
SELECT 'orders', count(*), sum(qty), printf('%.2f', sum(qty * price)) FROM orders;
SELECT city, count(*), sum(o.qty), printf('%.2f', avg(o.price))
  FROM orders o JOIN customers c ON c.id = o.customer GROUP BY city ORDER BY city;
SELECT item, count(*), max(length(note)) FROM orders
  GROUP BY item ORDER BY count(*) DESC, item LIMIT 5;
SELECT c.name, printf('%.2f', sum(o.qty * o.price)) AS total
  FROM customers c JOIN orders o ON o.customer = c.id
  GROUP BY c.id ORDER BY sum(o.qty * o.price) DESC, c.id LIMIT 5;
UPDATE orders SET note = note || ' ' || upper(item) || ' x' || qty WHERE qty % 3 = 0;
DELETE FROM orders WHERE qty % 7 = 0;
SELECT 'after update and delete', count(*), sum(length(note)), count(DISTINCT item) FROM orders;
SELECT substr(note, 1, 40) FROM orders ORDER BY note DESC, id LIMIT 3;
SELECT since / 10 * 10 AS decade, count(DISTINCT c.id), count(*)
  FROM customers c JOIN orders o ON o.customer = c.id GROUP BY decade ORDER BY decade;
""")
