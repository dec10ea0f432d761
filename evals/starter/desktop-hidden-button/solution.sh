python3 - <<'PY'
s = open('notes.py').read()
s = s.replace('    button = tk.Button(root, text="Save", command=save)\n    button.pack()\n', '    button = tk.Button(root, text="Save", command=save)\n    button.pack(side="bottom")\n')
s = s.replace('    text.pack(fill="both", expand=True)\n\n', '')
s = s.replace('    return button\n', '    text.pack(fill="both", expand=True)\n    return button\n')
open('notes.py', 'w').write(s)
PY
