/*
 * bench-claim - the CPU a job's store calls cost this process, and a read's:
 *
 *   bench-claim DB N
 *
 * Inserts N full-mode jobs (batches of 100), then drains them on one
 * connection: claim the compile stage, set_compiled, claim the run stage,
 * finish; then 200 store_stats() and 200 pages of store_list_submissions().
 * Prints the process CPU time (CLOCK_PROCESS_CPUTIME_ID) per job and per
 * read. DB: a SQLite file (put it on tmpfs to leave fsync out) or a
 * postgresql:// URI. Build (not part of the default build):
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -I/usr/include/postgresql bench/store/bench-claim.c \
 *      server/store/store.c server/store/store_*.c build-X/server/migrations.c build-X/server/pg_migrations.c \
 *      common/log.c -lsqlite3 -lpq -ljansson -lpthread -lm -o bench-claim
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/log.h"
#include "server/store/store.h"
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv)
{
        Store *s; int n = atoi(argv[2]);
        log_init("bench-claim", LOG_LEVEL_WARN);
        if (store_open(argv[1], &s)) return 1;
        json_t *req = json_pack("{s:s, s:{s:s}}", "source", "x", "tags", "run_id", "r1");
        StoreNew sn = { .request = req, .task = "t", .mode = "full", .priority = 0, .token_id = 0 };
        StoreNew *subs = calloc(100, sizeof(*subs)); int64_t ids[100];
        for (int i = 0; i < 100; i++) subs[i] = sn;
        for (int i = 0; i < n; i += 100) if (store_insert_submissions(s, subs, 100, ids, NULL, NULL, 0, 0)) return 2;
        json_t *comp = json_pack("{s:b}", "ok", 1), *res = json_pack("{s:s}", "verdict", "correct");
        double t0 = cpu(); int done = 0; StoreJob *j;
        while (store_claim_next(s, STAGE_COMPILE, "h/1", 30, &j) == 0) {
                if (store_set_compiled(s, j->id, "h/1", comp)) return 3;
                store_job_free(j);
                if (store_claim_next(s, STAGE_RUN, "h/1", 30, &j)) return 4;
                if (store_finish(s, j->id, "h/1", "correct", 1.5, res)) return 5;
                store_job_free(j); done++;
        }
        double t1 = cpu();
        json_t *st; for (int i = 0; i < 200; i++) { store_stats(s, &st); json_decref(st); }
        json_t *items; int64_t next; json_t *f = json_pack("{s:s}", "task", "t");
        for (int i = 0; i < 200; i++) { store_list_submissions(s, f, 0, 100, &items, &next); json_decref(items); }
        double t2 = cpu();
        printf("%d jobs: %.1f us CPU per job (2 claims, set_compiled, finish); 200 stats + 200 list pages: %.1f us each\n", done, (t1 - t0) / done * 1e6, (t2 - t1) / 400 * 1e6);
        store_close(s);
        return 0;
}
