cat > backup.sh <<'SH'
#!/bin/bash
# backup.sh SRC DEST: copies every .txt file under SRC into DEST, keeping the
# directory layout, and prints how many files it copied.
set -e
src=$1
dest=$2
count=0
while IFS= read -r -d '' f; do
  mkdir -p -- "$dest/$(dirname -- "$f")"
  cp -- "$src/$f" "$dest/$f"
  count=$((count + 1))
done < <(cd -- "$src" && find . -name '*.txt' -print0)
echo "copied $count files"
SH
