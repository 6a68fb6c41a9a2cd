#!/usr/bin/env bash
# bench/dashboard/run.sh BUILD [N] - fill a store with N finished submissions
# (default 100,000) through the store's own insert and finish paths, then
# measure every dashboard route against the real `kevald serve` on it
# (BENCHMARKS.md, "Dashboard routes"). The filled database is kept in
# $KEVALD_BENCH_DB (default /tmp/kevald-dash-bench.db) for reruns.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:?usage: bench/dashboard/run.sh BUILD [N]}
N=${2:-100000}
DB=${KEVALD_BENCH_DB:-/tmp/kevald-dash-bench.db}
FILL=$BUILD/bench-dashboard-fill
cc -O2 -std=c11 -D_GNU_SOURCE -I. -I/usr/include/postgresql bench/dashboard/fill.c server/store/store.c \
        server/store/store_sqlite.c server/store/store_pg.c "$BUILD/server/migrations.c" "$BUILD/server/pg_migrations.c" \
        common/log.c -lsqlite3 -lpq -ljansson -lpthread -lm -o "$FILL"
if [ ! -f "$DB" ] || [ "${REFILL:-0}" = 1 ]; then
        rm -f "$DB" "$DB-wal" "$DB-shm"
        "$FILL" "$DB" "$N"
fi
echo "store: $(sqlite3 "$DB" 'SELECT count(*) FROM submissions') submissions, $(du -m "$DB" | cut -f1) MB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/dashboard/measure.py --kevald "$BUILD/server/kevald" --db "$DB" --requests "${REQUESTS:-300}" --clients 1
python3 bench/dashboard/measure.py --kevald "$BUILD/server/kevald" --db "$DB" --requests "${REQUESTS:-100}" --clients 4
