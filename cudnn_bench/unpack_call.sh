#!/usr/bin/env bash
# Unpack a one-shot call's data.tgz into data/ and gzip again every suite file the repository
# keeps gzipped (the device copies the working tree, 64 MiB at most: a grown plain conv_grid.csv
# would not travel). From the repo root, right after a call:
#   bash cudnn_bench/unpack_call.sh <files_at>                     # fast (gzip -1): before a second call
#   LEVEL=9 bash cudnn_bench/unpack_call.sh <files_at>             # as committed (gzip -9)
# (<files_at>/data.tgz works too). A large pack comes in parts, data.tgz, data.tgz.1, ... that
# concatenate into one archive (cudnn_bench/packing.py); it holds only what the call wrote or
# changed. A second call that starts before this measures the first call's plan again: the device
# starts from this tree, and the first call's rows live only in its data.tgz until they are here.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 2
tgz=${1:-}
[ -d "$tgz" ] && tgz=$tgz/data.tgz
[ -f "$tgz" ] || { echo "unpack_call: give the call's files_at folder or its data.tgz (found none at '${tgz}')" >&2; exit 2; }
parts=("$tgz")
k=1
while [ -f "$tgz.$k" ]; do parts+=("$tgz.$k"); k=$((k + 1)); done
cat "${parts[@]}" | tar xzf -
if [ "${#parts[@]}" -gt 1 ]; then echo "unpack_call: ${#parts[@]} parts of $tgz"; fi
for plain in data/*/*.csv data/*/*.csv.superseded data/*/repeat/*.csv; do
  [ -f "$plain" ] || continue
  if git ls-files --error-unmatch "$plain.gz" >/dev/null 2>&1; then
    gzip -"${LEVEL:-1}" -n -f "$plain"
    echo "unpack_call: $plain.gz"
  fi
done
git status --short data
