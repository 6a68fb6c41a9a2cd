/*
 * test-config - the settings table: defaults, file parsing (comments,
 * whitespace, errors with line numbers), flag forms, precedence (flags over
 * file wherever --config stands), bounds, and the listen/loopback helpers.
 * Also checks that docs/configuration.md names every key.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "server/cmd/config.h"
#include "common/testcheck.h"

static char *write_tmp(const char *text)
{
        static char path[64];
        int fd;

        strcpy(path, "/tmp/kevald-test-config-XXXXXX");
        fd = mkstemp(path);
        assert(fd >= 0);
        assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        close(fd);
        return path;
}

static void test_defaults(void)
{
        Config c;

        config_init(&c);
        CHECK(!strcmp(c.listen, "127.0.0.1:8080"));
        CHECK(!strcmp(c.db, "kevald.db"));
        CHECK(c.tasks == NULL);
        CHECK(c.auth == CONFIG_AUTH_AUTO);
        CHECK(c.body_limit == (int64_t)LIMIT_BODY_BYTES_DEFAULT);
        CHECK(c.body_limit == 32 << 20);
        CHECK(c.body_inflight_limit == (int64_t)LIMIT_BODY_INFLIGHT_BYTES_DEFAULT);
        CHECK(c.per_ip_connection_limit == LIMIT_PER_IP_CONNECTIONS_DEFAULT);
        CHECK(c.header_timeout_s == LIMIT_HEADER_TIMEOUT_S_DEFAULT);
        CHECK(c.batch_limit == LIMIT_BATCH_DEFAULT);
        CHECK(c.sandbox == true);
        CHECK(c.insecure_no_auth == false);
        CHECK(c.rate == 0 && c.retry_after_s == 1);
        config_free(&c);
}

static void test_file(void)
{
        Config c;
        char err[256];
        char *path;
        int r;

        config_init(&c);
        path = write_tmp("# a comment\n\n  listen = 0.0.0.0:9000   # trailing comment\n"
                         "db=/var/lib/kevald.db\nbody_limit = 2M\nrate = 12.5\nauth = on\nsandbox = off\n");
        r = config_load_file(&c, path, err, sizeof(err));
        CHECK(r == 0);
        CHECK(!strcmp(c.listen, "0.0.0.0:9000"));
        CHECK(!strcmp(c.db, "/var/lib/kevald.db"));
        CHECK(c.body_limit == 2 << 20);
        CHECK(c.rate == 12.5);
        CHECK(c.auth == CONFIG_AUTH_ON);
        CHECK(c.sandbox == false);
        unlink(path);

        path = write_tmp("listen = 1.2.3.4:1\nbogus_key = 3\n");
        r = config_load_file(&c, path, err, sizeof(err));
        CHECK(r == CONFIG_E_UNKNOWN);
        CHECK(strstr(err, ":2:") && strstr(err, "bogus_key"));
        unlink(path);

        path = write_tmp("threads 4\n");
        CHECK(config_load_file(&c, path, err, sizeof(err)) == CONFIG_E_SYNTAX);
        CHECK(strstr(err, ":1:") != NULL);
        unlink(path);

        path = write_tmp("batch_limit = 999999999\n");
        CHECK(config_load_file(&c, path, err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(c.batch_limit == LIMIT_BATCH_DEFAULT);   /* unchanged on error */
        unlink(path);

        CHECK(config_load_file(&c, "/nonexistent/kevald.conf", err, sizeof(err)) < 0);
        config_free(&c);
}

static void test_values(void)
{
        Config c;
        char err[256];

        config_init(&c);
        CHECK(config_set(&c, "threads", "12x", err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_set(&c, "threads", "-1", err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_set(&c, "threads", "8", err, sizeof(err)) == 0 && c.threads == 8);
        CHECK(config_set(&c, "body-limit", "512M", err, sizeof(err)) == 0 && c.body_limit == 512 << 20);
        CHECK(config_set(&c, "body_limit", "513M", err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_set(&c, "body_limit", "10KiB", err, sizeof(err)) == 0 && c.body_limit == 10240);
        CHECK(config_set(&c, "body_limit", "-5", err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_set(&c, "rate", "nan", err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_set(&c, "rate", "1e3", err, sizeof(err)) == 0 && c.rate == 1000);
        CHECK(config_set(&c, "auth", "maybe", err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_set(&c, "auth", "off", err, sizeof(err)) == 0 && c.auth == CONFIG_AUTH_OFF);
        CHECK(config_set(&c, "insecure_no_auth", "yes", err, sizeof(err)) == 0 && c.insecure_no_auth);
        CHECK(config_set(&c, "nope", "1", err, sizeof(err)) == CONFIG_E_UNKNOWN);
        config_free(&c);
}

static void test_args(void)
{
        Config c;
        char err[256];
        char *path = write_tmp("listen = 10.0.0.1:1\ndb = from-file.db\nthreads = 3\n");
        char *argv1[] = { "--listen", "127.0.0.1:0", "--config", path, "--port-file=/tmp/p",
                          "--insecure-no-auth", "--compile-workers", "4" };
        char *argv2[] = { "--threads" };
        char *argv3[] = { "stray" };
        char *argv4[] = { "--no-such-flag", "1" };

        config_init(&c);
        CHECK(config_parse_args(&c, 8, argv1, err, sizeof(err)) == 0);
        CHECK(!strcmp(c.listen, "127.0.0.1:0"));   /* the flag wins over the file, though it came first */
        CHECK(!strcmp(c.db, "from-file.db"));      /* the file applies where no flag says otherwise */
        CHECK(c.threads == 3);
        CHECK(!strcmp(c.port_file, "/tmp/p"));
        CHECK(c.insecure_no_auth);
        CHECK(c.compile_workers == 4);
        CHECK(config_parse_args(&c, 1, argv2, err, sizeof(err)) == CONFIG_E_INVALID);
        CHECK(config_parse_args(&c, 1, argv3, err, sizeof(err)) == CONFIG_E_UNKNOWN);
        CHECK(config_parse_args(&c, 2, argv4, err, sizeof(err)) == CONFIG_E_UNKNOWN);
        CHECK(strstr(err, "no-such-flag") != NULL);
        config_free(&c);
        unlink(path);
}

static void test_listen(void)
{
        char host[64];
        int port = -1;

        CHECK(config_split_listen("127.0.0.1:8080", host, sizeof(host), &port) == 0);
        CHECK(!strcmp(host, "127.0.0.1") && port == 8080);
        CHECK(config_split_listen("[::1]:0", host, sizeof(host), &port) == 0);
        CHECK(!strcmp(host, "::1") && port == 0);
        CHECK(config_split_listen("localhost", host, sizeof(host), &port) == CONFIG_E_INVALID);
        CHECK(config_split_listen(":80", host, sizeof(host), &port) == CONFIG_E_INVALID);
        CHECK(config_split_listen("h:65536", host, sizeof(host), &port) == CONFIG_E_INVALID);
        CHECK(config_split_listen("h:8x", host, sizeof(host), &port) == CONFIG_E_INVALID);
        CHECK(config_host_is_loopback("127.0.0.1"));
        CHECK(config_host_is_loopback("127.1.2.3"));
        CHECK(config_host_is_loopback("::1"));
        CHECK(config_host_is_loopback("localhost"));
        CHECK(!config_host_is_loopback("0.0.0.0"));
        CHECK(!config_host_is_loopback("10.0.0.1"));
        CHECK(!config_host_is_loopback("::"));
        /* Decided on the resolved address, not on the spelling. */
        CHECK(config_host_is_loopback("127.1"));
        CHECK(config_host_is_loopback("0x7f.0.0.1"));
        CHECK(config_host_is_loopback("::ffff:127.0.0.1"));
        CHECK(!config_host_is_loopback("::ffff:10.0.0.1"));
        CHECK(!config_host_is_loopback("127.evil.invalid"));
        CHECK(!config_host_is_loopback("1.2.3.4"));
}

/* docs/configuration.md must name every key, as `key` in its table. */
static void test_docs(void)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");
        char path[512], *text;
        size_t n, len;
        const ConfigKey *keys = config_keys(&n);
        FILE *f;

        if (!root)
                return;
        snprintf(path, sizeof(path), "%s/docs/configuration.md", root);
        f = fopen(path, "r");
        CHECK(f != NULL);
        if (!f)
                return;
        text = malloc(1 << 20);
        len = fread(text, 1, (1 << 20) - 1, f);
        text[len] = 0;
        fclose(f);
        for (size_t i = 0; i < n; i++) {
                char needle[80];

                snprintf(needle, sizeof(needle), "`%s`", keys[i].key);
                if (!strstr(text, needle)) {
                        fprintf(stderr, "docs/configuration.md does not document %s\n", needle);
                        failures++;
                }
        }
        free(text);
}

int main(void)
{
        test_defaults();
        test_file();
        test_values();
        test_args();
        test_listen();
        test_docs();
        if (failures)
                fprintf(stderr, "%d check(s) failed\n", failures);
        else
                printf("config: all checks passed\n");
        return failures ? 1 : 0;
}
