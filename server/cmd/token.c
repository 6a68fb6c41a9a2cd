/*
 * token - `kevald token create|revoke|list`: manage API tokens in the
 * store. The token text is printed once, at creation, and never stored;
 * the store keeps its SHA-256 (server/http/auth.h).
 *
 *   kevald token create NAME [--rate R] [--burst B] [--max-queued N] [--admin]
 *   kevald token revoke NAME
 *   kevald token list
 *
 * Each takes --db FILE or --config FILE (its `db` key) like serve.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "server/http/auth.h"
#include "server/cmd/commands.h"
#include "server/cmd/config.h"
#include "server/store/store.h"

static void usage(FILE *f)
{
        fprintf(f, "usage: kevald token create NAME [--rate R] [--burst B] [--max-queued N] [--admin]\n"
                   "       kevald token revoke NAME\n"
                   "       kevald token list\n"
                   "options: --db FILE (default kevald.db), --config FILE (reads its db key)\n"
                   "  --rate R        requests per second for this token (default: the server's rate)\n"
                   "  --burst B       burst size (default: the server's burst)\n"
                   "  --max-queued N  unfinished submissions at most (default: the server's max_queued_per_token)\n"
                   "  --admin         sees and cancels every token's submissions\n");
}

static bool name_ok(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > LIMIT_NAME_BYTES)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      *s == '_' || *s == '-' || *s == '.'))
                        return false;
        return true;
}

static int parse_num(const char *flag, const char *v, double max, bool integer, double *ret)
{
        char *end;
        double d;

        errno = 0;
        d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d) || d < 0 || d > max || (integer && d != floor(d))) {
                fprintf(stderr, "kevald token: %s must be %s from 0 to %.0f\n", flag,
                        integer ? "an integer" : "a number", max);
                return -1;
        }
        *ret = d;
        return 0;
}

/**
 * cmd_token() - `kevald token ...`
 * @argv: argv[0] is "token"
 * Return: exit status: 0, 1 (store failure, unknown name), 2 (usage).
 */
int cmd_token(int argc, char **argv)
{
        const char *verb = NULL, *name = NULL;
        json_t *limits = json_object(), *list = NULL;
        Store *store = NULL;
        Config cfg;
        char err[512];
        bool db_given = false;
        int rc = 2, r;

        config_init(&cfg);
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                double d;

                if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                        usage(stdout);
                        rc = 0;
                        goto out;
                } else if (!strcmp(a, "--admin")) {
                        json_object_set_new(limits, "admin", json_true());
                } else if ((!strcmp(a, "--rate") || !strcmp(a, "--burst") || !strcmp(a, "--max-queued")) &&
                           i + 1 < argc) {
                        bool mq = !strcmp(a, "--max-queued");

                        if (parse_num(a, argv[++i], mq ? 1e8 : 1e9, mq, &d) < 0)
                                goto out;
                        if (mq)
                                json_object_set_new(limits, "max_queued", json_integer((json_int_t)d));
                        else
                                json_object_set_new(limits, a + 2, json_real(d));
                } else if (!strcmp(a, "--db") && i + 1 < argc) {
                        if (config_set(&cfg, "db", argv[++i], err, sizeof(err)) != 0)
                                goto bad;
                        db_given = true;
                } else if (!strcmp(a, "--config") && i + 1 < argc) {
                        r = config_load_file(&cfg, argv[++i], err, sizeof(err));
                        if (r != 0)
                                goto bad;
                        db_given = true;   /* a config file names its store on purpose */
                } else if (a[0] == '-') {
                        fprintf(stderr, "kevald token: unknown or incomplete option '%s'\n", a);
                        usage(stderr);
                        goto out;
                } else if (!verb) {
                        verb = a;
                } else if (!name) {
                        name = a;
                } else {
                        fprintf(stderr, "kevald token: unexpected argument '%s'\n", a);
                        goto out;
                }
        }
        if (!verb || (strcmp(verb, "list") && !name) || (!strcmp(verb, "list") && name)) {
                usage(stderr);
                goto out;
        }
        if (name && !name_ok(name)) {
                fprintf(stderr, "kevald token: NAME must be 1 to %d of [A-Za-z0-9_.-]\n", LIMIT_NAME_BYTES);
                goto out;
        }
        if (strcmp(verb, "create") && json_object_size(limits) > 0) {
                fprintf(stderr, "kevald token: --rate, --burst, --max-queued and --admin go with create\n");
                goto out;
        }
        if (strcmp(verb, "create") && strcmp(verb, "revoke") && strcmp(verb, "list")) {
                fprintf(stderr, "kevald token: unknown command '%s'\n", verb);
                usage(stderr);
                goto out;
        }
        rc = 1;
        if (!store_path_is_pg(cfg.db) && access(cfg.db, F_OK) != 0) {
                /* The default path, missing: opening would create an empty store beside the real one,
                 * and a token there opens nothing. A --db given is taken at its word, and said. */
                if (!db_given) {
                        fprintf(stderr, "kevald token: no store at '%s' (%s); give --db the file `kevald serve` "
                                "uses\n", cfg.db, strerror(errno));
                        rc = 2;
                        goto out;
                }
                fprintf(stderr, "kevald token: '%s' does not exist: creating a new, empty store there\n", cfg.db);
        }
        r = store_open(cfg.db, &store);
        if (r != 0) {
                char *shown = store_path_redacted(cfg.db);
                fprintf(stderr, "kevald token: cannot open the store '%s': %s\n", shown ? shown : "?",
                        r == STORE_E_NEWER_DB ? "the database is newer than this kevald" : strerror(-r));
                free(shown);
                if (r == -ENOTCONN)
                        rc = SERVE_EXIT_DB_UNREACHABLE;
                goto out;
        }
        if (!strcmp(verb, "create")) {
                char text[AUTH_TOKEN_TEXT_BYTES];
                uint8_t hash[32];
                int64_t id = 0;

                r = auth_token_generate(text);
                if (r < 0) {
                        fprintf(stderr, "kevald token: getrandom failed: %s\n", strerror(-r));
                        goto out;
                }
                auth_token_hash(text, hash);
                r = store_token_create(store, name, hash, limits, &id);
                if (r == STORE_E_CONFLICT) {
                        fprintf(stderr, "kevald token: a token named '%s' exists\n", name);
                        goto out;
                }
                if (r != 0) {
                        fprintf(stderr, "kevald token: cannot create: %s\n", strerror(r < 0 ? -r : EIO));
                        goto out;
                }
                printf("%s\n", text);
                fprintf(stderr, "kevald token: created '%s' (id %lld); the token is shown only this once\n", name,
                        (long long)id);
        } else if (!strcmp(verb, "revoke")) {
                r = store_token_revoke(store, name);
                if (r == STORE_E_NOT_FOUND) {
                        fprintf(stderr, "kevald token: no live token named '%s'\n", name);
                        goto out;
                }
                if (r != 0) {
                        fprintf(stderr, "kevald token: cannot revoke: %s\n", strerror(r < 0 ? -r : EIO));
                        goto out;
                }
                fprintf(stderr, "kevald token: revoked '%s'\n", name);
        } else {
                char *text;

                r = store_token_list(store, &list);
                if (r != 0) {
                        fprintf(stderr, "kevald token: cannot list: %s\n", strerror(r < 0 ? -r : EIO));
                        goto out;
                }
                text = json_dumps(list, JSON_INDENT(2));
                if (text)
                        printf("%s\n", text);
                free(text);
        }
        rc = 0;
        goto out;
bad:
        fprintf(stderr, "kevald token: %s\n", err);
out:
        store_close(store);
        json_decref(limits);
        json_decref(list);
        config_free(&cfg);
        return rc;
}
