#!/usr/bin/env bash
# A/B of one knob's two values on the same knob assignments: for each line of a knobs file, ROUNDS
# rounds of (`tune --knobs ...,KNOB=A`, `tune --knobs ...,KNOB=B`), each in a process of its own,
# alternating, so that a VM whose speed moves in phases moves both (e.g. prefetch_b 0 / 1 on the
# weights GEMMs of a network's layers, docs/search.md).
#
# usage: experiments/knob_ab.sh KNOBS_FILE KNOB A B [THREADS] [ROUNDS]
#   KNOBS_FILE: lines "OP LAYOUT SHAPE WEIGHTS KNOBS" (OP gemm, batch_matmul or conv2d; WEIGHTS 1 for
#   tune --weights, else 0; KNOBS as `tune show` prints them, without KNOB and threads); '#' lines
#   are skipped.
# Prints one line per round: GFLOP/s with A and with B (operands flushed before each call).
set -euo pipefail
if [ $# -lt 4 ]; then sed -n 2,11p "$0" >&2; exit 2; fi
file=$1 knob=$2 va=$3 vb=$4 threads=${5:-1} rounds=${6:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
tune=${TUNE:-$root/build/tools/tune}
[ -x "$tune" ] || { echo "knob_ab: $tune is not an executable (build first, or set TUNE)" >&2; exit 2; }
[ -f "$file" ] || { echo "knob_ab: no knobs file $file" >&2; exit 2; }
db=$(mktemp -d)/ab.db
trap 'rm -rf "$(dirname "$db")"' EXIT
measure() {  # OP LAYOUT SHAPE WEIGHTS KNOBS
  local w=()
  [ "$4" = 1 ] && w=(--weights)
  "$tune" --op "$1" --layout "$2" --shape "$3" "${w[@]}" --threads "$threads" --knobs "$5" --db "$db" --fresh 2>&1 |
    grep -o '[0-9.]* GFLOP/s measured' | cut -d' ' -f1 || echo failed
}
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p'), $threads thread(s); $knob $va / $vb; $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
grep -v '^#' "$file" | while read -r op layout shape weights knobs; do
  [ -n "$op" ] || continue
  k=$knobs
  [ "$threads" -gt 1 ] && k="$k,threads=$threads"
  for r in $(seq "$rounds"); do
    echo "$op $layout $shape weights=$weights t$threads round $r: $knob=$va $(measure "$op" "$layout" "$shape" "$weights" "$k,$knob=$va") $knob=$vb $(measure "$op" "$layout" "$shape" "$weights" "$k,$knob=$vb")"
  done
done
