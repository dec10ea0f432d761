python3 - <<'PY'
import collections, csv
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
t = collections.defaultdict(float)
for r in csv.DictReader(open('data/sales.csv')):
    t[r['date'][:7]] += float(r['amount'])
ms = sorted(t)
plt.figure(figsize=(10, 5))
plt.plot(ms, [t[m] for m in ms])
plt.title('Sales per month'); plt.xlabel('month'); plt.ylabel('amount')
plt.savefig('monthly_sales.png')
with open('monthly_totals.csv', 'w') as f:
    f.write('month,total\n' + ''.join(f'{m},{t[m]:.2f}\n' for m in ms))
PY
