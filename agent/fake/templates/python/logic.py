"""A {{.Noun}} list kept in a JSON file, with a small command line:

    python3 {{.Noun}}.py add "Write the README"
    python3 {{.Noun}}.py list
    python3 {{.Noun}}.py done 1
    python3 {{.Noun}}.py remove 1
"""

import argparse
import json
import sys
from dataclasses import asdict, dataclass


@dataclass
class {{.Class}}:
    id: int
    title: str
    done: bool = False


class {{.Class}}List:
    def __init__(self, {{.Nouns}}=None):
        self.{{.Nouns}} = list({{.Nouns}} or [])

    def add(self, title):
        title = title.strip()
        if not title:
            raise ValueError("a {{.Noun}} needs a title")
        item = {{.Class}}(id=max((x.id for x in self.{{.Nouns}}), default=0) + 1, title=title)
        self.{{.Nouns}}.append(item)
        return item

    def find(self, id):
        for x in self.{{.Nouns}}:
            if x.id == id:
                return x
        raise KeyError(f"no {{.Noun}} with id {id}")

    def toggle(self, id):
        x = self.find(id)
        x.done = not x.done
        return x

    def remove(self, id):
        self.{{.Nouns}}.remove(self.find(id))

    def remaining(self):
        return sum(not x.done for x in self.{{.Nouns}})

    @classmethod
    def load(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                return cls({{.Class}}(**x) for x in json.load(f))
        except FileNotFoundError:
            return cls()

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump([asdict(x) for x in self.{{.Nouns}}], f, indent=2)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Keep a {{.Noun}} list in a JSON file.")
    parser.add_argument("--file", default="{{.Nouns}}.json", help="where the list is kept")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("add").add_argument("title")
    sub.add_parser("done").add_argument("id", type=int)
    sub.add_parser("remove").add_argument("id", type=int)
    sub.add_parser("list")
    args = parser.parse_args(argv)

    items = {{.Class}}List.load(args.file)
    try:
        if args.command == "add":
            x = items.add(args.title)
            print(f"added #{x.id}: {x.title}")
        elif args.command == "done":
            x = items.toggle(args.id)
            print(f"#{x.id} is {'done' if x.done else 'not done'}")
        elif args.command == "remove":
            items.remove(args.id)
            print(f"removed #{args.id}")
    except (ValueError, KeyError) as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 1
    items.save(args.file)
    for x in items.{{.Nouns}}:
        print(f"[{'x' if x.done else ' '}] #{x.id} {x.title}")
    print(f"{items.remaining()} left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
