#!/usr/bin/env bash
# Every result file the documentation cites exists and is not empty (issue #13): paths matching
# experiments/results/NAME or datasets/...(.gz|.json|.jsonl|.txt|.csv|.png|.costmodel) in
# README.md and docs/*.md. Trailing sentence dots are not part of a path. A cited uncompressed
# dataset (datasets/X.jsonl) whose compressed form (datasets/X.jsonl.gz) exists counts as present:
# the documented commands make it with gunzip -k. Prints what is missing or empty and exits 1.
# Usage: cited_results_test.sh REPO_ROOT
set -uo pipefail
root=${1:?usage: cited_results_test.sh REPO_ROOT}
cd "$root" || { echo "cited_results_test: cannot enter $root"; exit 1; }
shopt -s nullglob
docs=(README.md docs/*.md)
[ -f README.md ] || { echo "cited_results_test: no README.md in $root"; exit 1; }

pattern='experiments/results/[A-Za-z0-9_.-]+|datasets/[A-Za-z0-9_./-]+\.(gz|json|jsonl|txt|csv|png|costmodel)'
mapfile -t cited < <(grep -ohE "$pattern" "${docs[@]}" | sed -E 's/\.+$//' | sort -u)

failures=0
for p in "${cited[@]}"; do
  where=$(grep -lF -- "$p" "${docs[@]}" | tr '\n' ' ')
  if [ -s "$p" ]; then
    continue
  elif [ -e "$p" ]; then
    echo "empty: $p (cited in ${where% })"
  elif [[ "$p" == datasets/* && -s "$p.gz" ]]; then
    continue
  else
    echo "missing: $p (cited in ${where% })"
  fi
  failures=$((failures + 1))
done

if [ "${#cited[@]}" -eq 0 ]; then
  echo "FAIL: no cited result files found in ${docs[*]} (pattern changed?)"
  exit 1
fi
if [ "$failures" -gt 0 ]; then
  echo "FAIL: $failures of ${#cited[@]} cited result files missing or empty"
  exit 1
fi
echo "ok: ${#cited[@]} cited result files exist and are not empty"
