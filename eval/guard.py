# The check guard of `drydock eval` (package eval, guard.go says why).
# It runs in the check's sandbox, as `python3 -I guard.py ROOT STATE PART...`,
# before the check: the parts (base64 of a JSON payload, written into the
# workspace through the API) name the files the grader owns. It says which
# of them the agent changed, deleted or added, puts the suite's copies back,
# removes what the task refuses, and writes the check's script outside the
# workspace. STATE (outside the workspace) keeps what the first run found,
# for a `drydock eval` killed mid-check and resumed, which runs the guard
# again in the same sandbox after the suite's copies are back (the agent's
# code the first check ran could have rewritten it: such a run's list of
# changes is only as good as that; its verdict does not depend on it). -I keeps the workspace off sys.path, so nothing the agent left
# there is imported here. It never follows a link: a path whose parent is a
# link or a file is removed, not written through.
import base64
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile

MAX_CHANGES = 100
MAX_WALK = 20000


def lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def real_parent(root, rel):
    """Whether every parent directory of rel under root is a real directory."""
    cur = root
    for c in rel.split("/")[:-1]:
        cur = os.path.join(cur, c)
        st = lstat(cur)
        if st is None or not stat.S_ISDIR(st.st_mode):
            return False
    return True


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        # O_NOFOLLOW is not needed: path was lstat'ed as a regular file and
        # nothing else runs in this sandbox.
        while True:
            b = f.read(1 << 16)
            if not b:
                return h.hexdigest()
            h.update(b)


def file_change(path, want):
    st = lstat(path)
    if st is None:
        return "deleted"
    if not stat.S_ISREG(st.st_mode):
        return "changed"  # a link, a directory or a device where a file was
    try:
        return None if digest(path) == want else "changed"
    except OSError:
        return "changed"  # unreadable (chmod 000)


def compare(root, g, changes):
    rel = g["path"]
    path = os.path.join(root, rel)
    if not real_parent(root, rel):
        changes.append((rel, "deleted" if lstat(path) is None else "changed"))
        return
    if not g["dir"]:
        c = file_change(path, g["files"][rel])
        if c:
            changes.append((rel, c))
        return
    st = lstat(path)
    if st is None or not stat.S_ISDIR(st.st_mode):
        changes.append((rel, "deleted" if st is None else "changed"))
        return
    seen = set()
    n = 0
    for dirpath, dirnames, filenames in os.walk(path):  # links are not followed
        # Python's bytecode caches are not the agent's doing (running the
        # tests writes them), and the check reads none of them (its
        # PYTHONPYCACHEPREFIX is elsewhere); the directory goes as a whole.
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" or os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            n += 1
            if n > MAX_WALK:
                changes.append((rel, "changed"))
                return
            full = os.path.join(dirpath, name)
            r = os.path.relpath(full, root)
            seen.add(r)
            want = g["files"].get(r)
            if want is None:
                changes.append((r, "added"))
            else:
                c = file_change(full, want)
                if c:
                    changes.append((r, c))
    for r in sorted(g["files"]):
        if r not in seen:
            changes.append((r, "deleted"))


def shadows(root, rel):
    """What Python would import instead of the graded module rel (a .py
    file): a package of the same name, an extension module or a sourceless
    .pyc beside it."""
    if not rel.endswith(".py") or not real_parent(root, rel):
        return []
    d, name = os.path.split(os.path.join(root, rel))
    mod = name[:-3]
    found = []
    try:
        names = os.listdir(d)
    except OSError:
        return []
    for n in sorted(names):
        if n == mod or n == mod + ".pyc" or (n.startswith(mod + ".") and n.endswith(".so")):
            found.append(os.path.relpath(os.path.join(d, n), root))
    return found


def refused_paths(root, pattern):
    """The paths a refused pattern names that exist: the path itself, or,
    for "**/NAME", every entry so named at any depth (not looking inside
    one, nor following links)."""
    if not pattern.startswith("**/"):
        return [pattern] if lstat(os.path.join(root, pattern)) is not None else []
    name = pattern[3:]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted(filenames + dirnames):
            if n == name:
                found.append(os.path.relpath(os.path.join(dirpath, n), root))
        dirnames[:] = [d for d in dirnames if d != name]
    return found


def writable(path):
    """Lets this user change path's entries again (the agent may have
    taken the write bit off a directory it owns)."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and not st.st_mode & stat.S_IWUSR:
            os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
    except OSError:
        pass


def remove(path):
    writable(os.path.dirname(path))
    st = lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        def retry(fn, p, _exc):
            writable(os.path.dirname(p))
            writable(p)
            fn(p)
        for dirpath, dirnames, _ in os.walk(path):
            writable(dirpath)
            for d in dirnames:
                writable(os.path.join(dirpath, d))
        shutil.rmtree(path, onerror=retry)
    else:
        os.unlink(path)


def clear(root, rel):
    """Removes rel, or the first of its parents that is not a real
    directory (a link must not be written through)."""
    cur = root
    parts = rel.split("/")
    for c in parts[:-1]:
        cur = os.path.join(cur, c)
        st = lstat(cur)
        if st is None:
            return
        if not stat.S_ISDIR(st.st_mode):
            remove(cur)
            return
    remove(os.path.join(cur, parts[-1]))


def write(root, rel, data, mode):
    cur = root
    for c in rel.split("/")[:-1]:
        cur = os.path.join(cur, c)
        st = lstat(cur)
        if st is None:
            os.mkdir(cur, 0o755)
        elif not stat.S_ISDIR(st.st_mode):
            remove(cur)
            os.mkdir(cur, 0o755)
        else:
            writable(cur)
    path = os.path.join(root, rel)
    remove(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def main():
    root = os.path.realpath(sys.argv[1])
    state = sys.argv[2]
    raw = b""
    for part in sys.argv[3:]:
        p = os.path.join(root, part)
        with open(p, "rb") as f:
            raw += f.read()
        os.unlink(p)
    os.unlink(os.path.join(root, os.path.basename(sys.argv[0])))
    payload = json.loads(base64.b64decode(raw))

    changes = []
    shadowing = []
    for g in payload["graded"]:
        compare(root, g, changes)
        for rel in g["files"]:
            shadowing += shadows(root, rel)
    changes += [(rel, "added") for rel in shadowing]
    refused = []
    for pattern in payload["refused"]:
        refused += refused_paths(root, pattern)
    changes += [(rel, "added") for rel in refused]
    seen = set()
    changes = [c for c in changes if not (c[0] in seen or seen.add(c[0]))]
    os.makedirs(state, mode=0o700, exist_ok=True)
    found = os.path.join(state, "changes.json")
    try:
        with open(found, encoding="utf-8") as f:
            changes = [tuple(c) for c in json.load(f)]  # what the agent left, found by the first run
    except FileNotFoundError:
        with open(found, "w", encoding="utf-8") as f:
            json.dump(changes, f)

    for g in payload["graded"]:
        clear(root, g["path"])
    for rel in refused + shadowing:
        clear(root, rel)
    for f in payload["files"]:
        write(root, f["path"], base64.b64decode(f["data"]), f["mode"])

    work = tempfile.mkdtemp(prefix="drydock-eval-")
    os.mkdir(os.path.join(work, "home"), 0o700)
    with open(os.path.join(work, "check.sh"), "w", encoding="utf-8") as f:
        f.write(payload["check"] + "\n")

    out = {"root": root, "dir": work, "changes": [{"path": p, "change": c} for p, c in changes[:MAX_CHANGES]]}
    if len(changes) > MAX_CHANGES:
        out["more"] = len(changes) - MAX_CHANGES
    print("DRYDOCK-EVAL-GUARD " + json.dumps(out))


if __name__ == "__main__":
    main()
