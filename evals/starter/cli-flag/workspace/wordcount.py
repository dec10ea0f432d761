#!/usr/bin/env python3
"""Count the words of a text file and print the most common ones."""
import argparse
import collections
import re
import sys


def count_words(text):
    return collections.Counter(re.findall(r"[A-Za-z']+", text))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", help="the text file to read")
    parser.add_argument("--top", type=int, default=3, help="how many words to print (default 3)")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as f:
        counts = count_words(f.read())
    for word, n in counts.most_common(args.top):
        print(f"{n} {word}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
