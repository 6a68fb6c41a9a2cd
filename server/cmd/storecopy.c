/*
 * storecopy - `kevald store copy --from FILE --to postgresql://... [--force]`:
 * move a single host's SQLite history into the PostgreSQL store of a fleet
 * (store_copy(), docs/store.md "Moving to a fleet"), and say what it copied,
 * one line per table. The target must be empty unless --force; the copy is
 * one transaction, so a failure leaves it as it was.
 *
 * The source is opened read-only (store_open_readonly()): a missing file
 * or one that is not a kevald store is refused before the target is touched,
 * never created and copied as an empty store over it.
 *
 * Exit status: 0 copied; 1 the copy failed; 2 bad arguments (a source that
 * is missing or not a kevald store included); 3 the target is unreachable
 * (as `kevald serve`); 4 the target is not empty.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "server/cmd/commands.h"
#include "server/store/store.h"

static void usage(FILE *f)
{
        fprintf(f, "usage: kevald store copy --from FILE --to postgresql://USER@HOST:PORT/DB [--force]\n"
                   "  copies every table of a SQLite store (ids, results, tokens, idempotency keys,\n"
                   "  counters, the compile cache, the secret) into an empty PostgreSQL store\n"
                   "  --force   replace what the target holds\n");
}

/**
 * cmd_store() - `kevald store copy ...`
 * @argv: argv[0] is "store"
 * Return: the exit status (see the file comment).
 */
int cmd_store(int argc, char **argv)
{
        const char *from = NULL, *to = NULL;
        Store *src = NULL, *dst = NULL;
        json_t *report = NULL, *n;
        const char *table;
        bool force = false;
        int64_t total = 0;
        int r, rc = 1;

        log_init("kevald", LOG_LEVEL_WARN);
        if (argc < 2 || strcmp(argv[1], "copy")) {
                usage(argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
                return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
        }
        for (int i = 2; i < argc; i++) {
                if (!strcmp(argv[i], "--from") && i + 1 < argc) {
                        from = argv[++i];
                } else if (!strcmp(argv[i], "--to") && i + 1 < argc) {
                        to = argv[++i];
                } else if (!strcmp(argv[i], "--force")) {
                        force = true;
                } else if (!strcmp(argv[i], "--help")) {
                        usage(stdout);
                        return 0;
                } else {
                        fprintf(stderr, "kevald store copy: unknown argument '%s'\n", argv[i]);
                        usage(stderr);
                        return 2;
                }
        }
        if (!from || !to || store_path_is_pg(from) || !store_path_is_pg(to)) {
                fprintf(stderr, "kevald store copy: --from must be a SQLite file and --to a postgresql:// URI\n");
                return 2;
        }
        /* Read-only: a missing file is not created (and then copied as an empty store over the target). */
        r = store_open_readonly(from, &src);
        if (r == -ENOENT || r == -EBADMSG) {
                fprintf(stderr, "kevald store copy: '%s' %s; nothing copied\n", from,
                        r == -ENOENT ? "does not exist" : "is not a kevald store");
                rc = 2;
                goto out;
        }
        if (r != 0) {
                fprintf(stderr, "kevald store copy: cannot open '%s': %s\n", from,
                        r > 0 ? "the database is newer than this kevald" : strerror(-r));
                goto out;
        }
        r = store_open(to, &dst);
        if (r != 0) {
                char *shown = store_path_redacted(to);
                fprintf(stderr, "kevald store copy: cannot open '%s': %s\n", shown ? shown : "?",
                        r == -ENOTCONN ? "PostgreSQL is unreachable" : r > 0 ? "the database is newer than this kevald"
                                                                                 : strerror(-r));
                free(shown);
                rc = r == -ENOTCONN ? SERVE_EXIT_DB_UNREACHABLE : 1;
                goto out;
        }
        r = store_copy(src, dst, force, &report);
        if (r == STORE_E_CONFLICT) {
                fprintf(stderr, "kevald store copy: the target already holds submissions or tokens; "
                                "nothing copied (--force replaces them)\n");
                rc = 4;
                goto out;
        }
        if (r != 0) {
                fprintf(stderr, "kevald store copy: failed, nothing copied: %s\n", strerror(r < 0 ? -r : EIO));
                goto out;
        }
        json_object_foreach(report, table, n) {
                printf("%-22s %" JSON_INTEGER_FORMAT "\n", table, json_integer_value(n));
                total += json_integer_value(n);
        }
        printf("%-22s %lld rows\n", "total", (long long)total);
        rc = 0;
out:
        json_decref(report);
        store_close(src);
        store_close(dst);
        return rc;
}
