cat > report.py <<'PY'
"""Sales reports over shop.db (schema: customers, orders, order_lines)."""
import sqlite3
import sys


def top_customers(db_path, n):
    """The n customers who spent the most on paid orders, as (name, total_cents)
    tuples, highest first (ties by name). Customers with no paid order are left out."""
    with sqlite3.connect(db_path) as db:
        return db.execute(
            """SELECT c.name, SUM(l.qty * l.unit_price_cents) AS total
               FROM customers c JOIN orders o ON o.customer_id = c.id JOIN order_lines l ON l.order_id = o.id
               WHERE o.status = 'paid' GROUP BY c.id ORDER BY total DESC, c.name LIMIT ?""", (n,)).fetchall()


if __name__ == "__main__":
    for name, cents in top_customers(sys.argv[1], int(sys.argv[2])):
        print(f"{name}\t{cents / 100:.2f}")
PY
