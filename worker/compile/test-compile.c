/*
 * Tests for the compile module and the kevald-compile executable, with the
 * real NVRTC and nvJitLink of this machine:
 *
 *   - a good kernel compiles; kernels, parameters and resources are right
 *     (registers compared with ptxas's own line in the raw log);
 *   - a syntax error is ok:false / "compile" with the first error first and
 *     its line number;
 *   - a template kernel through a name expression reports its lowered name;
 *   - PTX written by nvcc links to a CUBIN (tests/compile/vadd.ptx is
 *     `nvcc -ptx -arch=sm_90a tests/compile/vadd.cu`, CUDA 13.0);
 *   - refused options, non-UTF-8, NUL bytes, oversized sources (the
 *     #include and host code checks: test-compile-scan.c);
 *   - every successful compile has a fenced build beside the plain one
 *     (worker/compile/fence.h): an ELF with the fence's symbols, result.fence with
 *     the count of checked sites; the plain CUBIN has none of them;
 *   - the executable speaks the protocol (HELLO, JOB -> RESULT with the
 *     CUBIN, then the fenced CUBIN where result.fence.offset and .size say,
 *     SHUTDOWN, EOF, a malformed JOB), and a template bomb ends in a
 *     timeout RESULT and exit status WORKER_EXIT_TIMEOUT (4).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/limits.h"
#include "worker/compile/compile.h"
#include "worker/exitcode.h"
#include "worker/compile/stdshim.h"
#include "common/testcheck.h"
#include "worker/compile/testcompile.h"

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool has_bytes(const uint8_t *p, size_t n, const char *what)
{
        size_t k = strlen(what);

        for (size_t i = 0; p && i + k <= n; i++)
                if (memcmp(p + i, what, k) == 0)
                        return true;
        return false;
}

/* The fenced build is there, is an ELF with the fence's record, and checks @sites accesses. */
static void check_fenced(const CompileOutput *out, json_int_t sites)
{
        json_t *fence = json_object_get(out->result, "fence");

        CHECK(json_is_object(fence) && !json_object_get(fence, "error"));
        CHECK(json_integer_value(json_object_get(fence, "sites")) == sites);
        CHECK(out->fenced && out->fenced_len > 64 && memcmp(out->fenced, "\177ELF", 4) == 0);
        CHECK(has_bytes(out->fenced, out->fenced_len, "__kevald_fence_rec"));
        CHECK(has_bytes(out->fenced, out->fenced_len, "__kevald_fence_tab"));
        CHECK(!has_bytes(out->cubin, out->cubin_len, "__kevald_fence_rec"));
}

static json_t *kernel(const CompileOutput *out, const char *name)
{
        json_t *k;
        size_t i;

        json_array_foreach(json_object_get(out->result, "kernels"), i, k)
                if (strcmp(jstr(k, "name"), name) == 0)
                        return k;
        return NULL;
}

static long jint(json_t *o, const char *key)
{
        return (long)json_integer_value(json_object_get(o, key));
}

/* "Used N registers" for entry @name in the raw ptxas report. */
static long ptxas_registers(const char *raw, const char *name)
{
        char want[256];
        const char *p;

        snprintf(want, sizeof(want), "Compiling entry function '%s'", name);
        p = raw ? strstr(raw, want) : NULL;
        p = p ? strstr(p, "Used ") : NULL;
        return p ? strtol(p + 5, NULL, 10) : -1;
}

static void t_good(void)
{
        static const char src[] =
                "extern \"C\" __global__ void __launch_bounds__(256) k1(float *p, int n, double d, char c)\n"
                "{\n"
                "  __shared__ float sm[64];\n"
                "  int i = threadIdx.x;\n"
                "  sm[i % 64] = p[i] * d + c;\n"
                "  __syncthreads();\n"
                "  if (i < n) p[i] = sm[(i + 1) % 64];\n"
                "}\n"
                "__device__ __noinline__ float dev(float x, int n)\n"
                "{ float a[32]; for (int i = 0; i < 32; i++) a[i] = x * i; return a[n & 31]; }\n"
                "extern \"C\" __global__ void lb(float *p, int n) { p[threadIdx.x] = dev(p[0], n); }\n";
        static const char *const opts[] = { "-std=c++17", "-O3", "-DUNUSED=1", NULL };
        CompileOutput out;
        json_t *k, *params;
        double best = 1e9;

        run("cuda", src, strlen(src), opts, NULL, &out);
        CHECK(is_ok(&out));
        CHECK(out.cubin && out.cubin_len > 64 && memcmp(out.cubin, "\177ELF", 4) == 0);
        CHECK(json_is_null(json_object_get(out.result, "error")));
        CHECK(strcmp(jstr(out.result, "log"), "") == 0); /* ptxas lines never reach the client */
        CHECK(strcmp(jstr(out.result, "arch"), "sm_90a") == 0);
        CHECK(strcmp(jstr(out.result, "nvrtc"), compile_nvrtc_version(comp)) == 0);
        CHECK(json_array_size(json_object_get(out.result, "kernels")) == 2);
        check_fenced(&out, 4); /* k1: p[i] read and written; lb: p[0] read, p[threadIdx.x] written */
        k = kernel(&out, "k1");
        CHECK(k != NULL);
        if (k) {
                params = json_object_get(k, "params");
                CHECK(json_array_size(params) == 4);
                CHECK(jint(json_array_get(params, 2), "offset") == 16 &&
                      jint(json_array_get(params, 2), "size") == 8);
                CHECK(jint(json_array_get(params, 3), "offset") == 24 &&
                      jint(json_array_get(params, 3), "size") == 1);
                CHECK(jint(k, "registers") > 0);
                CHECK(jint(k, "registers") == ptxas_registers(out.raw_log, "k1"));
                CHECK(jint(k, "shared_static") == 256);
                CHECK(jint(k, "barriers") == 1);
                CHECK(jint(k, "max_threads_per_block") == 256);
                CHECK(jint(k, "local") == 0 && jint(k, "spill_stores") == 0 && jint(k, "spill_loads") == 0);
        }
        k = kernel(&out, "lb");
        CHECK(k != NULL);
        if (k) {
                CHECK(jint(k, "registers") == ptxas_registers(out.raw_log, "lb"));
                CHECK(jint(k, "local") == 128);
                CHECK(jint(k, "stack") == 128);
                CHECK(jint(k, "max_threads_per_block") == 1024);
                CHECK(jint(k, "barriers") == 0);
        }
        compile_output_clear(&out);

        /* Warm compiles of a small kernel: report the time (it is ~10 ms here). */
        for (int i = 0; i < 5; i++) {
                static const char small[] =
                        "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n)\n"
                        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n";
                double t0 = now_ms(), ms;
                run("cuda", small, strlen(small), NULL, NULL, &out);
                ms = now_ms() - t0;
                CHECK(is_ok(&out));
                CHECK(json_number_value(json_object_get(out.result, "compile_ms")) > 0);
                if (ms < best)
                        best = ms;
                compile_output_clear(&out);
        }
        printf("warm compile of a small kernel: best of 5 = %.1f ms\n", best);
        CHECK(best < 2000);
}

static void t_syntax_error(void)
{
        static const char src[] =
                "#warning a warning comes first in NVRTC's log\n"
                "extern \"C\" __global__ void k(float *p) {\n"
                "  p[0] = undefined_thing;\n"
                "  p[1] = other_undefined;\n"
                "}\n";
        CompileOutput out;
        const char *log;

        run("cuda", src, strlen(src), NULL, NULL, &out);
        CHECK(!is_ok(&out));
        CHECK(strcmp(jstr(out.result, "error"), "compile") == 0);
        CHECK(out.cubin == NULL && out.cubin_len == 0);
        log = jstr(out.result, "log");
        CHECK(strncmp(log, "kernel.cu(3): error: identifier \"undefined_thing\" is undefined", 61) == 0);
        CHECK(strstr(log, "kernel.cu(4): error") && strstr(log, "kernel.cu(1): warning"));
        CHECK(strstr(log, "p[0] = undefined_thing;") != NULL); /* the source line comes along */
        CHECK(json_is_false(json_object_get(out.result, "log_truncated")));
        CHECK(json_array_size(json_object_get(out.result, "kernels")) == 0);
        compile_output_clear(&out);
}

/* What -minimal leaves out (texture objects, runtime API types) still
 * compiles: the second, full compile takes over, and its CUBIN is used. */
static void t_minimal_fallback(void)
{
        static const char src[] =
                "extern \"C\" __global__ void tex(cudaTextureObject_t t, float *y, int *e)\n"
                "{\n"
                "  cudaError_t ok = cudaSuccess;\n"
                "  y[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);\n"
                "  e[threadIdx.x] = (int)ok;\n"
                "}\n";
        CompileOutput out;

        run("cuda", src, strlen(src), NULL, NULL, &out);
        CHECK(is_ok(&out));
        CHECK(out.cubin && out.cubin_len > 64);
        CHECK(strcmp(jstr(out.result, "log"), "") == 0);
        CHECK(kernel(&out, "tex") != NULL);
        compile_output_clear(&out);
}

static void t_name_expression(void)
{
        static const char src[] =
                "template <typename T, int N> __global__ void scale(T *x) { x[threadIdx.x] *= N; }\n";
        static const char *const names[] = { "scale<float, 4>", "scale<double,2>", NULL };
        static const char *const bad[] = { "scale<float, 4>; #include", NULL };
        CompileOutput out;
        json_t *lowered;
        const char *f4, *d2;

        run("cuda", src, strlen(src), NULL, names, &out);
        CHECK(is_ok(&out));
        lowered = json_object_get(out.result, "lowered_names");
        f4 = json_string_value(json_object_get(lowered, "scale<float, 4>"));
        d2 = json_string_value(json_object_get(lowered, "scale<double,2>"));
        CHECK(f4 && strcmp(f4, "_Z5scaleIfLi4EEvPT_") == 0);
        CHECK(d2 && strcmp(d2, "_Z5scaleIdLi2EEvPT_") == 0);
        CHECK(f4 && kernel(&out, f4) != NULL);
        CHECK(d2 && kernel(&out, d2) != NULL);
        compile_output_clear(&out);

        run("cuda", src, strlen(src), NULL, bad, &out);
        CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "compile") == 0);
        compile_output_clear(&out);

        /* NVRTC reports a bad name expression in "__nv_name_map": shown, not withheld. */
        {
                static const char *const undef[] = { "nonexistent<int>", NULL };
                run("cuda", src, strlen(src), NULL, undef, &out);
                CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "compile") == 0);
                CHECK(strstr(jstr(out.result, "log"), "__nv_name_map(2): error: identifier \"nonexistent\" is undefined") != NULL);
                CHECK(strstr(jstr(out.result, "log"), "withheld") == NULL);
                compile_output_clear(&out);
        }
}

static char *read_file(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "rb");
        char *buf;
        long n;

        if (!f)
                return NULL;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fseek(f, 0, SEEK_SET);
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
        }
        fclose(f);
        if (buf) {
                buf[n] = '\0';
                *ret_len = (size_t)n;
        }
        return buf;
}

static void t_ptx(void)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");
        char path[4096];
        size_t len = 0;
        char *ptx;
        static const char *const opts[] = { "-use_fast_math", "-maxrregcount=32", "-DIGNORED=1", NULL };
        CompileOutput out;
        json_t *k;

        snprintf(path, sizeof(path), "%s/tests/compile/vadd.ptx", root ? root : ".");
        ptx = read_file(path, &len);
        CHECK(ptx != NULL);
        if (!ptx)
                return;
        run("ptx", ptx, len, opts, NULL, &out);
        CHECK(is_ok(&out));
        CHECK(out.cubin && memcmp(out.cubin, "\177ELF", 4) == 0);
        k = kernel(&out, "vadd");
        CHECK(k && json_array_size(json_object_get(k, "params")) == 4);
        CHECK(k && jint(json_array_get(json_object_get(k, "params"), 3), "offset") == 24 &&
              jint(json_array_get(json_object_get(k, "params"), 3), "size") == 4);
        CHECK(k && jint(k, "registers") == ptxas_registers(out.raw_log, "vadd"));
        CHECK(strstr(jstr(out.result, "log"), "option '-DIGNORED=1' applies to CUDA C++ only") != NULL);
        check_fenced(&out, 3); /* two loads, one store */
        compile_output_clear(&out);

        /* .maxntid (Triton writes it) and .reqntid bound the block size. */
        {
                static const char *const dirs[][2] = { { ".maxntid 128, 1, 1", "128" },
                                                       { ".reqntid 16, 16, 1", "256" } };
                const char *anchor = "\t.param .u32 vadd_param_3\n)\n";
                char *at = strstr(ptx, anchor);
                CHECK(at != NULL);
                for (size_t i = 0; at && i < 2; i++) {
                        size_t head = (size_t)(at - ptx) + strlen(anchor);
                        char *src = malloc(len + 64);
                        if (!src)
                                break;
                        memcpy(src, ptx, head);
                        sprintf(src + head, "%s\n%s", dirs[i][0], ptx + head);
                        run("ptx", src, strlen(src), NULL, NULL, &out);
                        k = kernel(&out, "vadd");
                        CHECK(is_ok(&out) && k && jint(k, "max_threads_per_block") == atol(dirs[i][1]));
                        compile_output_clear(&out);
                        free(src);
                }
        }
        /* Broken PTX: a compile error with ptxas's message. */
        {
                char *broken = strdup(ptx), *p = broken ? strstr(broken, "ld.param") : NULL;
                if (p)
                        memcpy(p, "ld.bogus", 8);
                run("ptx", broken, len, NULL, NULL, &out);
                CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "compile") == 0);
                CHECK(strstr(jstr(out.result, "log"), "error") != NULL);
                compile_output_clear(&out);
                free(broken);
        }
        /* A call to a function no one defines: the link fails. */
        {
                static const char ext[] =
                        ".version 8.0\n.target sm_90a\n.address_size 64\n"
                        ".extern .func missing_fn ();\n"
                        ".visible .entry callit()\n{\n\tcall missing_fn;\n\tret;\n}\n";
                run("ptx", ext, strlen(ext), NULL, NULL, &out);
                CHECK(!is_ok(&out));
                CHECK(strcmp(jstr(out.result, "error"), "link") == 0 ||
                      strcmp(jstr(out.result, "error"), "compile") == 0);
                fprintf(stderr, "unresolved PTX call: error=%s log=%s\n", jstr(out.result, "error"),
                        jstr(out.result, "log"));
                compile_output_clear(&out);
        }
        free(ptx);
}

static void t_refusals(void)
{
        static const char src[] = "extern \"C\" __global__ void k(float *p) { p[0] = 1; }\n";
        static const char *const rdc[] = { "-rdc=true", NULL };
        static const char *const inc[] = { "-I/etc", NULL };
        CompileOutput out;
        char *big;

        run("cuda", src, strlen(src), rdc, NULL, &out);
        CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "rejected_option") == 0);
        CHECK(strstr(jstr(out.result, "log"), "relocatable device code") != NULL);
        compile_output_clear(&out);
        run("cuda", src, strlen(src), inc, NULL, &out);
        CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "rejected_option") == 0);
        compile_output_clear(&out);

        run("cuda", "int x = 1; /* caf\xe9 */\n", 22, NULL, NULL, &out);
        CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "not_utf8") == 0);
        CHECK(strstr(jstr(out.result, "log"), "line 1") != NULL);
        compile_output_clear(&out);
        run("cuda", "int x;\0#include \"/etc/passwd\"\n", 31, NULL, NULL, &out);
        CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "not_utf8") == 0);
        CHECK(strstr(jstr(out.result, "log"), "NUL") != NULL);
        compile_output_clear(&out);

        big = malloc(LIMIT_SOURCE_BYTES + 2);
        if (big) {
                memset(big, ' ', LIMIT_SOURCE_BYTES + 1);
                big[LIMIT_SOURCE_BYTES + 1] = '\0';
                run("cuda", big, LIMIT_SOURCE_BYTES + 1, NULL, NULL, &out);
                CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "too_large") == 0);
                compile_output_clear(&out);
                free(big);
        }
        {
                CompileJob job = { .language = "cuda", .arch = "sm_90; rm", .source = src,
                                   .source_len = strlen(src) };
                CHECK(compile_run(comp, &job, &out) == 0);
                CHECK(!is_ok(&out) && strcmp(jstr(out.result, "error"), "rejected_option") == 0);
                compile_output_clear(&out);
                job.arch = "sm_80";
                CHECK(compile_run(comp, &job, &out) == 0);
                CHECK(is_ok(&out) && strcmp(jstr(out.result, "arch"), "sm_80") == 0);
                compile_output_clear(&out);
                job.language = "fortran";
                CHECK(compile_run(comp, &job, &out) == 0);
                CHECK(!is_ok(&out));
                compile_output_clear(&out);
        }
}

#define KERNEL "extern \"C\" __global__ void k(float *p) { p[0] = 1; }\n"

/* ---- the executable -------------------------------------------------------- */

typedef struct Child {
        pid_t pid;
        int in, out; /* our ends: write JOBs to in, read frames from out */
} Child;

static int spawn_worker(Child *ch)
{
        const char *build = getenv("KEVALD_BUILD_ROOT");
        char exe[4096];
        int to[2], from[2];

        snprintf(exe, sizeof(exe), "%s/worker/kevald-compile", build ? build : ".");
        if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
                return -errno;
        ch->pid = fork();
        if (ch->pid < 0)
                return -errno;
        if (ch->pid == 0) {
                dup2(to[0], 0);
                dup2(from[1], 1);
                execl(exe, exe, (char *)NULL);
                _exit(127);
        }
        close(to[0]);
        close(from[1]);
        ch->in = to[1];
        ch->out = from[0];
        return 0;
}

static int wait_worker(Child *ch)
{
        int st = 0;

        close(ch->in);
        close(ch->out);
        if (waitpid(ch->pid, &st, 0) < 0)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static json_t *read_json(Child *ch, uint32_t want_type, Frame *ret_frame)
{
        Frame f = { 0 };
        json_t *j;

        if (frame_read(ch->out, &f) != 0 || f.type != want_type) {
                frame_clear(&f);
                return NULL;
        }
        j = json_loadb(f.json, f.json_len, 0, NULL);
        if (ret_frame)
                *ret_frame = f;
        else
                frame_clear(&f);
        return j;
}

static void send_job(Child *ch, const char *json, const char *src)
{
        CHECK(frame_write(ch->in, FRAME_JOB, json, strlen(json), src, strlen(src)) == 0);
}

static void t_protocol(void)
{
        Child ch;
        json_t *hello, *res;
        Frame f = { 0 };
        double t0;

        signal(SIGPIPE, SIG_IGN);
        CHECK(spawn_worker(&ch) == 0);
        hello = read_json(&ch, FRAME_HELLO, NULL);
        CHECK(hello != NULL);
        if (!hello) {
                fprintf(stderr, "no HELLO: the worker exited with status %d\n", wait_worker(&ch));
                return;
        }
        CHECK(strcmp(jstr(hello, "role"), "compile") == 0);
        CHECK(strcmp(jstr(hello, "nvrtc"), compile_nvrtc_version(comp)) == 0);
        CHECK(strcmp(jstr(hello, "arch_default"), "sm_90a") == 0);
        CHECK(jint(hello, "pid") == ch.pid);
        CHECK(json_is_object(json_object_get(hello, "layers")));
        CHECK(json_is_object(json_object_get(json_object_get(hello, "layers"), "seccomp")));
        json_decref(hello);

        send_job(&ch, "{\"id\": 41, \"language\": \"cuda\", \"arch\": \"sm_90a\", \"options\": [\"-std=c++17\"], "
                      "\"name_expressions\": [], \"deadline_ms\": 30000}", KERNEL);
        res = read_json(&ch, FRAME_RESULT, &f);
        CHECK(res && jint(res, "id") == 41 && json_is_true(json_object_get(res, "ok")));
        CHECK(f.blob_len > 0 && memcmp(f.blob, "\177ELF", 4) == 0);
        {
                json_t *fence = json_object_get(res, "fence");
                json_int_t off = jint(fence, "offset"), size = jint(fence, "size");
                CHECK(off > 64 && size > 64 && (size_t)(off + size) == f.blob_len);
                CHECK(off > 64 && (size_t)off < f.blob_len && memcmp(f.blob + off, "\177ELF", 4) == 0);
                CHECK(jint(fence, "sites") > 0);
        }
        CHECK(res && json_array_size(json_object_get(res, "kernels")) == 1);
        frame_clear(&f);
        json_decref(res);

        /* "fence": false: the plain CUBIN alone */
        send_job(&ch, "{\"id\": 40, \"fence\": false}", KERNEL);
        res = read_json(&ch, FRAME_RESULT, &f);
        CHECK(res && jint(res, "id") == 40 && json_is_true(json_object_get(res, "ok")));
        CHECK(res && !json_object_get(res, "fence"));
        CHECK(f.blob_len > 0 && memcmp(f.blob, "\177ELF", 4) == 0 && !has_bytes(f.blob, f.blob_len, "__kevald_fence"));
        frame_clear(&f);
        json_decref(res);

        /* After seccomp: a toolkit header still opens, a shim too, and /etc/passwd is refused. */
        send_job(&ch, "{\"id\": 42}", "#include <cuda_fp16.h>\n" KERNEL);
        res = read_json(&ch, FRAME_RESULT, &f);
        CHECK(res && jint(res, "id") == 42 && json_is_true(json_object_get(res, "ok")));
        CHECK(f.blob_len > 0);
        frame_clear(&f);
        json_decref(res);
        /* The shims are in-memory headers: they need no file inside the sandbox. */
        send_job(&ch, "{\"id\": 45}", "#include <cmath>\n#include <cstdint>\n#include <cfloat>\n"
                 "#include <type_traits>\nextern \"C\" __global__ void k(float *p, uint32_t n) "
                 "{ p[0] = -INFINITY + FLT_MAX + std::sqrt(p[1]) + std::is_same<int, int>::value + n; }\n");
        res = read_json(&ch, FRAME_RESULT, &f);
        CHECK(res && jint(res, "id") == 45 && json_is_true(json_object_get(res, "ok")));
        CHECK(f.blob_len > 0);
        frame_clear(&f);
        json_decref(res);
        send_job(&ch, "{\"id\": 43}", "#include \"/etc/passwd\"\n" KERNEL);
        res = read_json(&ch, FRAME_RESULT, &f);
        CHECK(res && jint(res, "id") == 43 && !json_is_true(json_object_get(res, "ok")));
        CHECK(res && strcmp(jstr(res, "error"), "compile") == 0 && !strstr(jstr(res, "log"), "root:"));
        CHECK(f.blob_len == 0);
        frame_clear(&f);
        json_decref(res);
        send_job(&ch, "{\"id\": 44, \"language\": \"ptx\", \"options\": [\"-G\"]}", ".version 8.0\n");
        res = read_json(&ch, FRAME_RESULT, NULL);
        CHECK(res && jint(res, "id") == 44 && strcmp(jstr(res, "error"), "rejected_option") == 0);
        json_decref(res);

        /* SHUTDOWN: exit 0. */
        CHECK(frame_write(ch.in, FRAME_SHUTDOWN, "{}", 2, NULL, 0) == 0);
        CHECK(wait_worker(&ch) == 0);

        /* EOF: exit 0. A malformed JOB: exit 2, no RESULT. */
        CHECK(spawn_worker(&ch) == 0);
        json_decref(read_json(&ch, FRAME_HELLO, NULL));
        CHECK(wait_worker(&ch) == 0);
        CHECK(spawn_worker(&ch) == 0);
        json_decref(read_json(&ch, FRAME_HELLO, NULL));
        send_job(&ch, "{\"id\": \"seven\"}", KERNEL);
        CHECK(wait_worker(&ch) == 2);
        CHECK(spawn_worker(&ch) == 0);
        json_decref(read_json(&ch, FRAME_HELLO, NULL));
        CHECK(write(ch.in, "KVF1garbagegarbage", 18) == 18);
        CHECK(wait_worker(&ch) == 2);

        /* A template bomb (2^40 distinct instantiations) against a 1.5 s deadline. */
        CHECK(spawn_worker(&ch) == 0);
        json_decref(read_json(&ch, FRAME_HELLO, NULL));
        t0 = now_ms();
        send_job(&ch, "{\"id\": 77, \"deadline_ms\": 1500}",
                 "template <int N, long M> struct C { static const long v = C<N-1, 2*M>::v + C<N-1, 2*M+1>::v; };\n"
                 "template <long M> struct C<0, M> { static const long v = M; };\n"
                 "extern \"C\" __global__ void k(long *p) { p[0] = C<40, 0>::v; }\n");
        res = read_json(&ch, FRAME_RESULT, NULL);
        printf("template bomb: RESULT after %.0f ms\n", now_ms() - t0);
        CHECK(res && jint(res, "id") == 77 && !json_is_true(json_object_get(res, "ok")));
        CHECK(res && strcmp(jstr(res, "error"), "timeout") == 0);
        CHECK(res && strstr(jstr(res, "log"), "exceeded the 1.5 s limit") != NULL);
        CHECK(now_ms() - t0 >= 1400 && now_ms() - t0 < 10000);
        json_decref(res);
        CHECK(wait_worker(&ch) == WORKER_EXIT_TIMEOUT);
}

int main(void)
{
        CHECK(compile_open(getenv("KEVALD_CUDA_HOME"), &comp) == 0);
        if (!comp)
                return 1;
        t_good();
        t_syntax_error();
        t_minimal_fallback();
        t_name_expression();
        t_ptx();
        t_refusals();
        compile_close(comp);
        comp = NULL;
        CHECK(compile_open(getenv("KEVALD_CUDA_HOME"), &comp) == 0);
        t_protocol();
        compile_close(comp);
        if (failures)
                fprintf(stderr, "test-compile: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
