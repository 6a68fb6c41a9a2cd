/*
 * Unit tests for log trimming and the ptxas report (worker/compile/logtrim.c). The
 * logs below are real NVRTC 13.0 output captured on the development
 * machine (the "secret" one from `#include "/tmp/exp/secret.txt"` of a file
 * holding a fake passwd line, before the #include check existed), so the
 * format the code relies on is the format NVRTC writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/compile/logtrim.h"
#include "common/testcheck.h"

static const char *const trusted[] = { "/usr/local/cuda/include/", "/usr/local/cuda-13.0/targets/x86_64-linux/include/" };

static const char ptxas_log[] =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
        "ptxas info    : Function properties for big\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 10 registers, used 0 barriers\n"
        "ptxas info    : Compile time = 2.591 ms\n"
        "ptxas info    : Compiling entry function 'lb' for 'sm_90a'\n"
        "ptxas info    : Function properties for lb\n"
        "ptxas         .     128 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 30 registers, used 0 barriers, 128 bytes cumulative stack size\n"
        "ptxas info    : Compile time = 4.336 ms\n"
        "ptxas info    : Function properties for _Z3devfi\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'k1' for 'sm_90a'\n"
        "ptxas info    : Function properties for k1\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 12 registers, used 1 barriers, 256 bytes smem\n"
        "ptxas info    : Compile time = 3.810 ms\n";

static const char warning_then_errors[] =
        "kernel.cu(1): warning #1105-D: #warning directive: hello there\n"
        "  #warning hello there\n"
        "   ^\n"
        "\n"
        "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
        "\n"
        "kernel.cu(3): error: identifier \"undefined_thing\" is undefined\n"
        "    p[0] = undefined_thing;\n"
        "           ^\n"
        "\n"
        "kernel.cu(4): error: identifier \"other_undefined\" is undefined\n"
        "    p[1] = other_undefined;\n"
        "           ^\n"
        "\n"
        "2 errors detected in the compilation of \"kernel.cu\".\n";

static const char secret_log[] =
        "/tmp/exp/secret.txt(1): error: identifier \"secret_line_one\" is undefined\n"
        "  secret_line_one here\n"
        "  ^\n"
        "\n"
        "/tmp/exp/secret.txt(1): error: A namespace scope variable without memory space annotations "
        "(__device__/__constant__/__shared__/__managed__) is considered a host variable, and host "
        "variables are not allowed in JIT mode. Consider using -default-device flag to process "
        "unannotated namespace scope variables as __device__ variables in JIT mode\n"
        "  secret_line_one here\n"
        "                  ^\n"
        "\n"
        "/tmp/exp/secret.txt(2): error: expected a \";\"\n"
        "  root:x:0:0:root:/root:/bin/bash\n"
        "  ^\n"
        "\n"
        "3 errors detected in the compilation of \"kernel.cu\".\n";

static const char toolkit_log[] =
        "/usr/local/cuda/include/cuda_fp16.h(5320): error: invalid combination of type specifiers\n"
        "  typedef __half2 half2;\n"
        "                  ^\n"
        "\n"
        "1 error detected in the compilation of \"kernel.cu\".\n";

static char *clean(const char *raw, size_t cap, bool *ret_trunc)
{
        static const char *const names[] = { "kernel.cu", "__nv_name_map" };
        LogtrimConfig cfg = { .source_names = names, .n_source_names = 2,
                              .trusted_prefixes = trusted, .n_trusted = 2, .cap = cap };
        char *out = NULL;
        bool trunc = false;

        CHECK(logtrim_clean(raw, &cfg, &out, &trunc) == 0);
        if (ret_trunc)
                *ret_trunc = trunc;
        return out;
}

static void t_ptxas(void)
{
        PtxasKernel *k = NULL;
        const PtxasKernel *p;
        size_t n = 0;

        CHECK(logtrim_parse_ptxas(ptxas_log, &k, &n) == 0);
        CHECK(n == 4); /* big, lb, _Z3devfi, k1 */
        p = logtrim_find_ptxas(k, n, "k1");
        CHECK(p && p->registers == 12 && p->barriers == 1 && p->smem == 256 && p->stack_frame == 0 &&
              p->spill_stores == 0 && p->stack == -1);
        p = logtrim_find_ptxas(k, n, "lb");
        CHECK(p && p->registers == 30 && p->stack_frame == 128 && p->spill_stores == 4 &&
              p->spill_loads == 8 && p->stack == 128 && p->smem == -1);
        p = logtrim_find_ptxas(k, n, "big");
        CHECK(p && p->registers == 10 && p->barriers == 0);
        /* The callee's properties do not leak into the next entry's registers. */
        p = logtrim_find_ptxas(k, n, "_Z3devfi");
        CHECK(p && p->registers == -1 && p->stack_frame == 0);
        CHECK(logtrim_find_ptxas(k, n, "nope") == NULL);
        logtrim_ptxas_free(k, n);

        /* nvJitLink's info log has the same lines. */
        k = NULL;
        CHECK(logtrim_parse_ptxas("ptxas info    : Compiling entry function 'vadd' for 'sm_90a'\n"
                                  "ptxas info    : Function properties for vadd\n"
                                  "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                                  "ptxas info    : Used 12 registers, used 0 barriers\n", &k, &n) == 0);
        CHECK(n == 1 && k && strcmp(k[0].name, "vadd") == 0 && k[0].registers == 12);
        logtrim_ptxas_free(k, n);
        CHECK(logtrim_parse_ptxas("", &k, &n) == 0 && n == 0);
        logtrim_ptxas_free(k, n);
}

static void t_clean(void)
{
        bool trunc = true;
        char *s;

        /* A successful compile: nothing but ptxas lines, so an empty log. */
        s = clean(ptxas_log, 16384, &trunc);
        CHECK(s && strcmp(s, "") == 0 && !trunc);
        free(s);

        /* First error first, its context with it, nothing lost. */
        s = clean(warning_then_errors, 16384, &trunc);
        CHECK(s && !trunc);
        CHECK(s && strncmp(s, "kernel.cu(3): error: identifier \"undefined_thing\" is undefined\n"
                              "    p[0] = undefined_thing;\n"
                              "           ^\n\n", strlen("kernel.cu(3): error: identifier \"undefined_thing\" is undefined\n"
                              "    p[0] = undefined_thing;\n"
                              "           ^\n\n")) == 0);
        CHECK(s && strstr(s, "kernel.cu(1): warning #1105-D") && strstr(s, "kernel.cu(4): error"));
        CHECK(s && strstr(s, "kernel.cu(1): warning") < strstr(s, "kernel.cu(4): error"));
        CHECK(s && strstr(s, "2 errors detected"));
        CHECK(s && s[strlen(s) - 1] == '\n' && s[strlen(s) - 2] != '\n');
        free(s);

        /* Host file content never comes out. */
        s = clean(secret_log, 16384, &trunc);
        CHECK(s && !strstr(s, "secret_line_one") && !strstr(s, "root:") && !strstr(s, "/bin/bash") &&
              !strstr(s, "secret.txt"));
        CHECK(s && strstr(s, "(withheld): error: a diagnostic located in a file"));
        CHECK(s && strstr(s, "3 errors detected"));
        free(s);

        /* Indented lines after a blank line still belong to the withheld diagnostic. */
        s = clean("/etc/shadow(1): error: x\n  alpha\n\n  beta_secret\n\nkernel.cu(2): error: y\n", 16384, NULL);
        CHECK(s && !strstr(s, "alpha") && !strstr(s, "beta_secret") && strstr(s, "kernel.cu(2): error: y"));
        free(s);
        /* A file name cannot borrow a trusted name after a parenthesis. */
        s = clean("/tmp/x(1): kernel.cu(2): error: leaked\n  leaked_line\n", 16384, NULL);
        CHECK(s && !strstr(s, "leaked"));
        free(s);
        /* Nor climb out of the toolkit. */
        s = clean("/usr/local/cuda/include/../../../etc/passwd(1): error: z\n  root_line\n", 16384, NULL);
        CHECK(s && !strstr(s, "root_line"));
        free(s);

        /* Toolkit headers are public: their diagnostics stay. */
        s = clean(toolkit_log, 16384, NULL);
        CHECK(s && strstr(s, "/usr/local/cuda/include/cuda_fp16.h(5320): error") &&
              strstr(s, "typedef __half2 half2;"));
        free(s);
}

static void t_truncate(void)
{
        char *raw = NULL, *s;
        size_t len = 0;
        FILE *f = open_memstream(&raw, &len);
        bool trunc = false;
        unsigned long more_bytes = 0, more_errors = 0;
        const char *note;

        CHECK(f != NULL);
        if (!f)
                return;
        fprintf(f, "kernel.cu(1): warning #177-D: variable \"x\" was declared but never referenced\n  int x;\n      ^\n\n");
        for (int i = 0; i < 400; i++)
                fprintf(f, "kernel.cu(%d): error: identifier \"v%d\" is undefined\n    p[0] = v%d;\n           ^\n\n",
                        i + 2, i, i);
        fprintf(f, "400 errors detected in the compilation of \"kernel.cu\".\n");
        fclose(f);

        s = clean(raw, 4096, &trunc);
        CHECK(s && trunc);
        CHECK(s && strlen(s) <= 4096);
        CHECK(s && strncmp(s, "kernel.cu(2): error: identifier \"v0\"", 36) == 0);
        note = s ? strstr(s, "... (") : NULL;
        CHECK(note && sscanf(note, "... (%lu more bytes, %lu more errors)", &more_bytes, &more_errors) == 2);
        /* The note adds up: what is shown plus what is missing is the whole log. */
        CHECK(note && more_bytes > 0 && more_bytes == strlen(raw) - (size_t)(note - s));
        CHECK(more_errors > 300 && more_errors < 400);
        free(s);

        /* One huge block: its head is kept, cut on a UTF-8 boundary. */
        {
                char *one = malloc(20000), *p = one;
                p += sprintf(p, "kernel.cu(1): error: too long\n  ");
                while (p - one < 19000) {
                        memcpy(p, "\xc3\xa9", 2); /* é */
                        p += 2;
                }
                strcpy(p, "\n");
                s = clean(one, 1000, &trunc);
                CHECK(s && trunc && strlen(s) <= 1000 && strncmp(s, "kernel.cu(1): error: too long", 29) == 0);
                CHECK(s && logtrim_utf8_prefix((const unsigned char *)s, strlen(s)) == strlen(s));
                free(s);
                free(one);
        }
        free(raw);
}

static void t_utf8(void)
{
        char *s = clean("kernel.cu(1): error: bad \xff\xfe byte \xe2\x82 cut\n", 16384, NULL);

        CHECK(s && strcmp(s, "kernel.cu(1): error: bad ?? byte ?? cut\n") == 0);
        free(s);
        CHECK(logtrim_utf8_prefix((const unsigned char *)"ok \xe2\x82\xac", 6) == 6);
        CHECK(logtrim_utf8_prefix((const unsigned char *)"\xc0\x80", 2) == 0);        /* overlong */
        CHECK(logtrim_utf8_prefix((const unsigned char *)"\xed\xa0\x80", 3) == 0);    /* surrogate */
        CHECK(logtrim_utf8_prefix((const unsigned char *)"\xf4\x90\x80\x80", 4) == 0); /* > U+10FFFF */
        s = clean(NULL, 100, NULL);
        CHECK(s && *s == '\0');
        free(s);
}

int main(void)
{
        t_ptxas();
        t_clean();
        t_truncate();
        t_utf8();
        if (failures)
                fprintf(stderr, "test-logtrim: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
