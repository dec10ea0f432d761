#!/bin/bash
# backup.sh SRC DEST: copies every .txt file under SRC into DEST, keeping the
# directory layout, and prints how many files it copied.
set -e
src=$1
dest=$2
count=0
for f in $(cd $src && find . -name '*.txt'); do
  mkdir -p $dest/$(dirname $f)
  cp $src/$f $dest/$f
  count=$((count + 1))
done
echo "copied $count files"
