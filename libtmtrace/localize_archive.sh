#!/bin/sh
# localize_archive.sh OUT PATTERNS ARCHIVE...
#
# Makes the static library OUT that a program can link without name clashes:
# the members of every ARCHIVE are linked into one relocatable object
# (ld -r), every defined global symbol not matching one of the
# space-separated shell PATTERNS (e.g. 'tmt_* Tx*') is made local (objcopy),
# and the object is archived alone. References between the library's own
# files are resolved inside the object, so nothing else needs a global name.
set -eu
out=$1
patterns=$2
shift 2
tmp="$out.d"
rm -rf "$tmp" "$out"
mkdir -p "$tmp"
ld -r --whole-archive "$@" -o "$tmp/all.o"
keep=""
for p in $patterns; do
    keep="$keep --keep-global-symbol=$p"
done
# -w: the patterns are wildcards.
objcopy -w $keep "$tmp/all.o" "$tmp/lib.o"
ar rcs "$out" "$tmp/lib.o"
rm -rf "$tmp"
