#!/usr/bin/env python3
"""A tiny notes window: type a note and press Save to append it to notes.txt."""
import tkinter as tk


def build(root):
    """Lays out the window's widgets and returns the Save button."""
    root.title("Notes")
    root.geometry("360x240")
    text = tk.Text(root, height=20, width=40)
    text.pack(fill="both", expand=True)

    def save():
        with open("notes.txt", "a", encoding="utf-8") as f:
            f.write(text.get("1.0", "end").strip() + "\n")
        text.delete("1.0", "end")

    button = tk.Button(root, text="Save", command=save)
    button.pack()
    return button


if __name__ == "__main__":
    root = tk.Tk()
    build(root)
    root.mainloop()
