#!/bin/bash
# Issue #35's study goal, on a throw-away PostgreSQL server started here: in each of N rounds, three
# `tune worker` processes tune one study together while
#   - worker 1 is killed with -9 as soon as it holds claims,
#   - worker 2's network (a TCP proxy, experiments/tcp_cut_proxy.py) is cut for longer than its
#     lease, then restored,
#   - the server is restarted once (immediate stop, 1 s down),
# and afterwards the study must have exactly its trials as records, every candidate once, no claim
# left. Prints one line per round and the count of rounds that held; output
# experiments/results/studies_chaos.txt.
# Usage: experiments/studies_chaos.sh [--rounds N] [--trials T]   (build first: scripts/build.sh)
# CHAOS_OUT=FILE writes the output there instead (e.g. a second machine kind's run beside the first).
set -u
cd "$(dirname "$0")/.."
rounds=20
trials=24
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--trials T]" >&2; exit 2 ;;
  esac
done
tune=build/tools/tune
[ -x "$tune" ] || { echo "error: $tune not found: build first (scripts/build.sh)" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
dir=$(mktemp -d /tmp/sextant-chaos.XXXXXX)
as=""
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; as="runuser -u postgres --"; fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
proxy_port=$(free_port)
$as "$bin/initdb" -D "$dir/data" -A trust -U sextant --no-sync >/dev/null
pg() { $as "$bin/pg_ctl" -D "$dir/data" -w -l "$dir/log" -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" "$@" >/dev/null; }
pg start
echo ok > "$dir/control"
python3 experiments/tcp_cut_proxy.py "$proxy_port" "$port" "$dir/control" &
proxy=$!
trap 'kill $proxy 2>/dev/null; $as "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
q() { psql -At -h 127.0.0.1 -p "$port" -U sextant -d "$1" -c "$2" 2>/dev/null; }
out=${CHAOS_OUT:-experiments/results/studies_chaos.txt}
mkdir -p experiments/results
held=0
{
  echo "# command: experiments/studies_chaos.sh --rounds $rounds --trials $trials"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) vCPUs; PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1; $(date -u +%Y-%m-%d); commit $(git rev-parse --short HEAD)"
  echo "# each round: gemm 128x128x128, $trials trials, batch 2, --min-time 0.3, strategy random; workers --lease 2 --heartbeat 0.3;"
  echo "# worker 2 starts first and connects through the proxy; 'lost' = it said it could not renew its lease,"
  echo "# 'dropped' = measurements it did not record because another worker had taken the candidates over"
  echo "round | records | distinct | claims left | w2 lost | w2 dropped | w2 reconnected | exits (w0, w2) | wall | held"
  for r in $(seq 1 "$rounds"); do
    t0=$(date +%s.%N)
    createdb -h 127.0.0.1 -p "$port" -U sextant "round$r"
    url="postgresql://sextant@127.0.0.1:$port/round$r"
    purl="postgresql://sextant@127.0.0.1:$proxy_port/round$r"
    $tune --op gemm --shape 128x128x128 --trials "$trials" --batch 2 --min-time 0.3 --strategy random --seed "$r" \
      --workers 0 --db "$url" >/dev/null 2>&1
    # (setsid: each worker leads a process group, so that -9 reaches its measuring children too)
    setsid $tune worker --db "$purl" --lease 2 --heartbeat 0.3 --jobs 1 -q >/dev/null 2>"$dir/w2.err" &
    w2=$!
    sleep 0.3
    setsid $tune worker --db "$url" --lease 2 --heartbeat 0.3 --jobs 1 -q >/dev/null 2>"$dir/w0.err" &
    w0=$!
    setsid $tune worker --db "$url" --lease 2 --heartbeat 0.3 --jobs 1 -q >/dev/null 2>"$dir/w1.err" &
    w1=$!
    # Kill worker 1 as soon as it holds claims.
    for i in $(seq 1 200); do
      [ "$(q "round$r" "SELECT count(*) FROM claims WHERE worker LIKE '%:$w1'")" != "0" ] && break
      sleep 0.05
    done
    kill -9 -- "-$w1" 2>/dev/null
    wait "$w1" 2>/dev/null
    # Cut worker 2's network once it holds claims, for 4 s (its lease is 2 s).
    for i in $(seq 1 200); do
      [ "$(q "round$r" "SELECT count(*) FROM claims WHERE worker LIKE '%:$w2'")" != "0" ] && break
      sleep 0.05
    done
    echo cut > "$dir/control"
    sleep 1.5
    # The server restarts while worker 2 is cut off.
    pg -m immediate stop
    sleep 1
    pg start
    sleep 1.5
    echo ok > "$dir/control"
    wait "$w0"; e0=$?
    wait "$w2"; e2=$?
    t1=$(date +%s.%N)
    recs=$(q "round$r" "SELECT count(*) FROM records")
    distinct=$(q "round$r" "SELECT count(DISTINCT candidate) FROM records")
    claims=$(q "round$r" "SELECT count(*) FROM claims")
    lost=$(grep -c "could not renew its lease" "$dir/w2.err")
    dropped=$(grep -c "not recorded" "$dir/w2.err")
    reconnected=$(grep -c "reconnected" "$dir/w2.err")
    ok=no
    if [ "$recs" = "$trials" ] && [ "$distinct" = "$trials" ] && [ "$claims" = "0" ]; then ok=yes; held=$((held + 1)); fi
    printf "%5d | %7s | %8s | %11s | %7s | %10s | %14s | %s, %s | %.1f s | %s\n" "$r" "$recs" "$distinct" "$claims" \
      "$lost" "$dropped" "$reconnected" "$e0" "$e2" "$(python3 -c "print($t1 - $t0)")" "$ok"
    cp "$dir/w2.err" "/tmp/studies_chaos_w2_round$r.err" 2>/dev/null
  done
  echo "rounds that held (every candidate recorded exactly once, no duplicate, no claim left): $held of $rounds"
} | tee "$out"
