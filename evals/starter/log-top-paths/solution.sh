cat > top_paths.py <<'PY'
import collections, re, sys
c = collections.Counter()
for line in open(sys.argv[1], encoding='utf-8', errors='replace'):
    m = re.search(r'"[A-Z]+ (\S+) HTTP/[0-9.]+"', line)
    if m:
        p = m.group(1).split('?', 1)[0]
        if p != '/healthz':
            c[p] += 1
for p, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
    print(n, p)
PY
