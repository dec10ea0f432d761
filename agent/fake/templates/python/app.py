"""A window for the {{.Noun}} list (Tk): add, tick off and remove {{.Nouns}}.

    python3 app.py
"""

import tkinter as tk

from {{.Noun}} import {{.Class}}List

FILE = "{{.Nouns}}.json"


class App(tk.Tk):
    def __init__(self):
        super().__init__()
        self.title({{pyrepr .Title}})
        self.geometry("420x360+60+60")
        self.items = {{.Class}}List.load(FILE)

        top = tk.Frame(self)
        top.pack(fill="x", padx=8, pady=8)
        self.entry = tk.Entry(top)
        self.entry.pack(side="left", fill="x", expand=True)
        self.entry.bind("<Return>", lambda e: self.add())
        tk.Button(top, text="Add", command=self.add).pack(side="left", padx=4)

        self.listbox = tk.Listbox(self)
        self.listbox.pack(fill="both", expand=True, padx=8)
        bottom = tk.Frame(self)
        bottom.pack(fill="x", padx=8, pady=8)
        tk.Button(bottom, text="Done / not done", command=self.toggle).pack(side="left")
        tk.Button(bottom, text="Remove", command=self.remove).pack(side="left", padx=4)
        self.status = tk.Label(bottom)
        self.status.pack(side="right")
        self.refresh()
        self.entry.focus_set()

    def selected(self):
        sel = self.listbox.curselection()
        return self.items.{{.Nouns}}[sel[0]].id if sel else None

    def add(self):
        try:
            self.items.add(self.entry.get())
        except ValueError:
            return
        self.entry.delete(0, "end")
        self.refresh()

    def toggle(self):
        if (id := self.selected()) is not None:
            self.items.toggle(id)
            self.refresh()

    def remove(self):
        if (id := self.selected()) is not None:
            self.items.remove(id)
            self.refresh()

    def refresh(self):
        self.items.save(FILE)
        self.listbox.delete(0, "end")
        for x in self.items.{{.Nouns}}:
            self.listbox.insert("end", f"{'✔' if x.done else '•'} {x.title}")
        self.status.config(text=f"{self.items.remaining()} left")


if __name__ == "__main__":
    App().mainloop()
