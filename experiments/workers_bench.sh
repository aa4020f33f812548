#!/bin/sh
# Issue #17's benchmark, on a throw-away PostgreSQL server started here (Debian's postgresql):
#  1. coordination overhead: build/experiments/bench_claims with 4 workers, candidates claimed and
#     committed one at a time and in batches of 16 (tune's default batch);
#  2. throughput when measurement, not compilation, is the bottleneck: one study of T trials tuned
#     by 1 worker, then an identical study (new database) by 2 workers (tune --workers N,
#     --min-time 1 on a 512x512x1024 GEMM: each candidate is timed for about a second, 100 calls at
#     most), wall time of each and the ratio.
# Run it on an otherwise idle machine. Results: experiments/results/workers_bench.txt.
# Usage: experiments/workers_bench.sh [--trials T]
set -e
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null
trials=16
if [ "${1:-}" = "--trials" ]; then trials=$2; fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
dir=$(mktemp -d /tmp/sextant-pgbench.XXXXXX)
as=""
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; as="runuser -u postgres --"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$as "$bin/initdb" -D "$dir/data" -A trust -U sextant --no-sync >/dev/null
$as "$bin/pg_ctl" -D "$dir/data" -w -l "$dir/log" -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
trap '$as "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
url() { createdb -h 127.0.0.1 -p "$port" -U sextant "$1"; echo "postgresql://sextant@127.0.0.1:$port/$1"; }
out=experiments/results/workers_bench.txt
mkdir -p experiments/results
{
  echo "# command: experiments/workers_bench.sh --trials $trials"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) vCPUs; PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1; $(date -u +%Y-%m-%d)"
  echo "## coordination overhead (no compilation or measurement: the database's share alone)"
  build/experiments/bench_claims "$(url claims1)" --workers 4 --candidates 192 --batch 1
  build/experiments/bench_claims "$(url claims16)" --workers 4 --candidates 192 --batch 16
  echo "## throughput, measurement-bound (gemm 512x512x1024, --min-time 1, $trials trials, batch 2, strategy exhaustive: both runs measure the same candidates)"
  for n in 1 2; do
    u=$(url "through$n")
    t0=$(date +%s.%N)
    build/tools/tune --op gemm --shape 512x512x1024 --trials "$trials" --batch 2 --min-time 1 --strategy exhaustive \
      --workers "$n" --db "$u" >/dev/null
    t1=$(date +%s.%N)
    recs=$(psql -At -h 127.0.0.1 -p "$port" -U sextant -d "through$n" -c "SELECT count(*) || ' records, ' || count(DISTINCT candidate) || ' distinct' FROM records")
    echo "$n worker(s): $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall ($recs)"
    eval "wall$n=$(python3 -c "print($t1 - $t0)")"
  done
  python3 -c "print(f'throughput 2 workers / 1 worker: {$wall1 / $wall2:.2f}x (goal: at least 1.8x)')"
} | tee "$out"
