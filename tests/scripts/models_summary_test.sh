#!/usr/bin/env bash
# experiments/models/summary.py (issue #32's table): a peer that kept more cores busy than its
# threads while timed (Debian's PyTorch through OpenBLAS's own pool, found 2026-12-03) is named and
# not taken as the fastest peer; a peer within its threads is. Fails on the summary before the check.
# Usage: models_summary_test.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: models_summary_test.sh REPO_ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/r.jsonl" <<'J'
{"peer": "sextant", "model": "m", "sextant": {"threads": 1, "measured_tuned_s": 0.020, "measured_untuned_s": 0.030, "check": {"ok": true}, "device": "x", "machine": "y"}, "wall_s": 1}
{"peer": "pytorch", "model": "m", "threads": 1, "max_abs_error": 0.0, "max_abs_expected": 1.0, "median_s": 0.010, "cpu_per_wall": 1.98}
{"peer": "ort", "model": "m", "threads": 1, "max_abs_error": 0.0, "max_abs_expected": 1.0, "median_s": 0.025, "cpu_per_wall": 1.0}
J
/usr/bin/python3 "$root/experiments/models/summary.py" "$tmp/r.jsonl" "$tmp/out" "--threads 1" "test CPU" > "$tmp/stdout"
fail=0
grep -q "pytorch ok (used 2.0 cores: not compared)" "$tmp/out.txt" || { echo "models_summary_test: the 2-core peer is not named"; fail=1; }
# the fastest peer within its threads is ORT (25 ms): Sextant's 20 ms is 1.25x it, not 0.50x PyTorch's 10
grep -qE "^m .* 1\.25x" "$tmp/out.txt" || { echo "models_summary_test: 'vs best peer' is not against ORT"; cat "$tmp/out.txt"; fail=1; }
/usr/bin/python3 - "$tmp/out.json" <<'P' || fail=1
import json, sys
t = json.load(open(sys.argv[1]))["models"]["m"]
assert t["peers"]["pytorch"]["more_threads"] is True and t["peers"]["ort"]["more_threads"] is False, t
assert abs(t["best_peer_s"] - 0.025) < 1e-12, t
P
[ $fail -eq 0 ] && echo "models_summary_test: ok"
exit $fail
