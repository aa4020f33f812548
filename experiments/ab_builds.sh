#!/usr/bin/env bash
# A/B of two builds of Sextant on the same knob assignments: for each line of a knobs file, ROUNDS
# rounds of (old build's `tune --knobs`, new build's `tune --knobs`, oneDNN's matmul primitive),
# each in processes of their own, alternating, so that a VM whose speed moves in phases moves all
# three. For a change of emission (the same knobs, other code): build the old commit elsewhere
# (git worktree add /tmp/old OLD && cmake -G Ninja -S /tmp/old -B /tmp/old/build && ninja -C
# /tmp/old/build tools/tune) and pass its tune.
#
# usage: experiments/ab_builds.sh OLD_TUNE NEW_TUNE KNOBS_FILE THREADS [ROUNDS]
#   KNOBS_FILE: lines "OP LAYOUT SHAPE KNOBS" (OP gemm or batch_matmul; KNOBS as `tune show` prints
#   them, without threads); '#' lines are skipped.
# Prints one line per round: GFLOP/s of old, new and oneDNN (A, B and C flushed before each call).
set -euo pipefail
if [ $# -lt 4 ]; then sed -n 2,13p "$0" >&2; exit 2; fi
old=$1 new=$2 file=$3 threads=$4 rounds=${5:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
libref=$root/build/tools/sextant-libref
for t in "$old" "$new" "$libref"; do [ -x "$t" ] || { echo "ab_builds: $t is not an executable" >&2; exit 2; }; done
[ -f "$file" ] || { echo "ab_builds: no knobs file $file" >&2; exit 2; }
db=$(mktemp -d)/ab.db
trap 'rm -rf "$(dirname "$db")"' EXIT
measure() {  # TUNE OP LAYOUT SHAPE KNOBS
  "$1" --op "$2" --layout "$3" --shape "$4" --threads "$threads" --knobs "$5" --db "$db" --fresh 2>&1 |
    grep -o '[0-9.]* GFLOP/s measured' | cut -d' ' -f1 || echo failed
}
onednn() {  # OP LAYOUT SHAPE
  local spec
  spec=$(printf '{"library":"onednn","config":"matmul","config_index":-1,"workload":"%s:%s:%s:f32*f32->f32","seed":1,"threads":%s,"warmup":2,"min_reps":10,"max_reps":100,"min_time_s":0.05,"flush_cache":true,"flush_bytes":0,"rtol":1e-4,"atol_per_k":1e-5}' "$1" "$2" "$3" "$threads")
  OMP_PROC_BIND=true "$libref" measure "$spec" 2>/dev/null | python3 -c "
import json, statistics, sys
d = json.load(sys.stdin); dims = [int(x) for x in '$3'.split('x')]
flops = 2.0
for x in dims: flops *= x
print('%.1f' % (flops / statistics.median(d['times']) / 1e9) if d.get('times') else 'failed')"
}
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p'), $threads thread(s); old $old, new $new"
grep -v '^#' "$file" | while read -r op layout shape knobs; do
  [ -n "$op" ] || continue
  k=$knobs
  [ "$threads" -gt 1 ] && k="$k,threads=$threads"
  for r in $(seq "$rounds"); do
    echo "$op $layout $shape t$threads round $r: old $(measure "$old" "$op" "$layout" "$shape" "$k") new $(measure "$new" "$op" "$layout" "$shape" "$k") onednn $(onednn "$op" "$layout" "$shape")"
  done
done
