cat > todo.py <<'PY'
import tkinter as tk
root = tk.Tk()
root.title("Todo")
entry = tk.Entry(root)
entry.pack()
items = tk.Listbox(root)
def add():
    if entry.get().strip():
        items.insert("end", entry.get().strip())
        entry.delete(0, "end")
def delete():
    for i in reversed(items.curselection()):
        items.delete(i)
tk.Button(root, text="Add", command=add).pack()
items.pack()
tk.Button(root, text="Delete", command=delete).pack()
root.mainloop()
PY
