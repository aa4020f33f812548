#!/usr/bin/env bash
# Every result file the documentation cites exists and is not empty (issue #13), and every figure
# table names the command that produced it (issue #12; figure_tables.awk says what counts): paths matching
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

# Figure tables without a command in their section (or just below them). The check is first shown
# to catch a table that has none, so that it cannot pass by matching nothing.
awk_file="$(dirname "$0")/figure_tables.awk"
[ -f "$awk_file" ] || awk_file="$root/tests/scripts/figure_tables.awk"
probe=$(printf '# t\n\n| a | b |\n|---|---|\n| x | 1.5 |\n' | awk -f "$awk_file")
if [ -z "$probe" ]; then
  echo "FAIL: figure_tables.awk does not flag a figure table without a command"
  failures=$((failures + 1))
fi
for d in "${docs[@]}"; do
  while read -r at; do
    [ -n "$at" ] || continue
    echo "figure table without a command: $at (name the command above it, or say 'no reproducing command')"
    failures=$((failures + 1))
  done < <(awk -f "$awk_file" "$d")
done

if [ "${#cited[@]}" -eq 0 ]; then
  echo "FAIL: no cited result files found in ${docs[*]} (pattern changed?)"
  exit 1
fi
if [ "$failures" -gt 0 ]; then
  echo "FAIL: $failures problems (cited result files missing or empty, figure tables without a command)"
  exit 1
fi
echo "ok: ${#cited[@]} cited result files exist and are not empty; every figure table names its command"
