/*
 * kevald-compile - the compile worker: frames in on fd 0, frames out on
 * fd 1, log lines on fd 2 (docs/internals.md, "Compile worker").
 *
 * Theory of operation. At start: sandbox_enter() (single-threaded, before
 * anything else), compile_open(), one warm-up compile of a tiny kernel and
 * one warm-up PTX link (NVRTC dlopens libnvrtc-builtins on its first
 * compile), the watchdog thread is started, sandbox_lock() (seccomp: no
 * thread can be created afterwards), then HELLO. Then one JOB at a time,
 * each answered with exactly one RESULT: the frame loop both workers share
 * (worker/workerloop.h) reads the frames and calls handle_job().
 *
 * NVRTC cannot be interrupted: a template bomb spins for minutes. Each job
 * arms the watchdog with its deadline and a RESULT already rendered for
 * the timeout case; if the compile is still running at the deadline, the
 * watchdog writes that RESULT and calls _exit(WORKER_EXIT_TIMEOUT), and the supervisor
 * starts a fresh worker. One mutex (out_lock) guards both the watchdog
 * state and every write to fd 1, so a timeout RESULT and a normal RESULT
 * can never interleave or both be sent: whoever takes the lock first with
 * the job still armed answers, the other finds it disarmed.
 *
 * Exit status (worker/exitcode.h): 0 after SHUTDOWN or end of input (or
 * when the worker's CPU lifetime budget is nearly spent, after answering),
 * 1 on an internal failure (after an "internal" RESULT when a job was
 * running), 2 when the supervisor sent a malformed frame or JOB, 4 after a
 * timeout RESULT.
 */
#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/sha256.h"
#include "sandbox/sandbox.h"
#include "worker/compile/compile.h"
#include "worker/exitcode.h"
#include "worker/workerloop.h"


static const char warmup_cuda[] =
        "extern \"C\" __global__ void kevald_warmup(float *p, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] *= 2.0f; }\n";
static const char warmup_ptx[] =
        ".version 8.0\n.target sm_90a\n.address_size 64\n"
        ".visible .entry kevald_warmup_ptx()\n{\n\tret;\n}\n";

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
/* The secret behind each group's tag (the names of a merged program, worker/compile/group.h):
 * random, drawn at start; a tag is HMAC-SHA-256(secret, group number), so that one group's tag
 * (which a source could read back through a diagnostic) tells nothing of another's. */
static uint8_t group_secret[32];
static uint64_t groups_run;

static uint64_t next_group_tag(void)
{
        uint8_t mac[32];
        uint64_t tag = 0;

        groups_run++;
        hmac_sha256(group_secret, sizeof(group_secret), &groups_run, sizeof(groups_run), mac);
        memcpy(&tag, mac, sizeof(tag));
        return tag;
}
static pthread_cond_t wd_cond;

/* Watchdog state; guarded by out_lock. */
static struct {
        bool started;               /* the thread runs (its start-up system calls are done) */
        bool armed;
        struct timespec deadline;   /* CLOCK_MONOTONIC */
        char *timeout_json;         /* the RESULT to send at the deadline */
        size_t timeout_len;
} wd;

static bool ts_reached(const struct timespec *now, const struct timespec *t)
{
        return now->tv_sec > t->tv_sec || (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

static void *watchdog_main(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&out_lock);
        wd.started = true;
        pthread_cond_broadcast(&wd_cond);
        for (;;) {
                struct timespec now;
                if (!wd.armed) {
                        pthread_cond_wait(&wd_cond, &out_lock);
                        continue;
                }
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (ts_reached(&now, &wd.deadline)) {
                        /* Still holding out_lock: no RESULT can follow this one. */
                        (void)frame_write(STDOUT_FILENO, FRAME_RESULT, wd.timeout_json, wd.timeout_len,
                                          NULL, 0);
                        log_warn("compile: job exceeded its deadline: exiting");
                        _exit(WORKER_EXIT_TIMEOUT);
                }
                pthread_cond_timedwait(&wd_cond, &out_lock, &wd.deadline);
        }
        return NULL;
}

static int watchdog_start(void)
{
        pthread_condattr_t attr;
        pthread_t t;
        int r;

        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        r = pthread_cond_init(&wd_cond, &attr);
        pthread_condattr_destroy(&attr);
        if (r != 0)
                return -r;
        r = pthread_create(&t, NULL, watchdog_main, NULL);
        if (r != 0)
                return -r;
        pthread_detach(t);
        /*
         * Wait until the thread runs: a new thread makes system calls of its
         * own at start (set_robust_list, rseq) that the seccomp filter loaded
         * next does not allow.
         */
        pthread_mutex_lock(&out_lock);
        while (!wd.started)
                pthread_cond_wait(&wd_cond, &out_lock);
        pthread_mutex_unlock(&out_lock);
        return 0;
}

/* Arm the watchdog; takes ownership of @timeout_json. */
static void watchdog_arm(long deadline_ms, char *timeout_json)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += deadline_ms / 1000;
        t.tv_nsec += (deadline_ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&out_lock);
        free(wd.timeout_json);
        wd.timeout_json = timeout_json;
        wd.timeout_len = strlen(timeout_json);
        wd.deadline = t;
        wd.armed = true;
        pthread_cond_signal(&wd_cond);
        pthread_mutex_unlock(&out_lock);
}

/* Disarm the watchdog and send @json (+ @blob) as the job's RESULT. */
static int send_result(const json_t *json, const void *blob, size_t blob_len)
{
        char *text = json_dumps(json, JSON_COMPACT);
        int r;

        if (!text)
                return -ENOMEM;
        pthread_mutex_lock(&out_lock);
        wd.armed = false;
        r = frame_write(STDOUT_FILENO, FRAME_RESULT, text, strlen(text), blob, blob_len);
        pthread_mutex_unlock(&out_lock);
        free(text);
        return r;
}

/*
 * The RESULT of a compile: the blob is the plain CUBIN, then the fenced one
 * when there is one, whose place result.fence.offset and .size give.
 */
static int send_output(CompileOutput *out)
{
        json_t *fence = json_object_get(out->result, "fence");
        uint8_t *blob;
        int r;

        if (!out->fenced || !json_is_object(fence))
                return send_result(out->result, out->cubin, out->cubin_len);
        if (!(blob = malloc(out->cubin_len + out->fenced_len)))
                return -ENOMEM;
        memcpy(blob, out->cubin, out->cubin_len);
        memcpy(blob + out->cubin_len, out->fenced, out->fenced_len);
        if (json_object_set_new(fence, "offset", json_integer((json_int_t)out->cubin_len)) ||
            json_object_set_new(fence, "size", json_integer((json_int_t)out->fenced_len)))
                r = -ENOMEM;
        else
                r = send_result(out->result, blob, out->cubin_len + out->fenced_len);
        free(blob);
        return r;
}

static int send_frame(uint32_t type, const json_t *json)
{
        char *text = json_dumps(json, JSON_COMPACT);
        int r;

        if (!text)
                return -ENOMEM;
        pthread_mutex_lock(&out_lock);
        r = frame_write(STDOUT_FILENO, type, text, strlen(text), NULL, 0);
        pthread_mutex_unlock(&out_lock);
        free(text);
        return r;
}

/* A string array field, or NULL; -EINVAL when present with the wrong type. */
static int string_array(json_t *job, const char *key, const char ***ret_v, size_t *ret_n)
{
        json_t *a = json_object_get(job, key), *e;
        const char **v;
        size_t i;

        *ret_v = NULL;
        *ret_n = 0;
        if (!a || json_is_null(a))
                return 0;
        if (!json_is_array(a))
                return -EINVAL;
        v = calloc(json_array_size(a) + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        json_array_foreach(a, i, e) {
                if (!json_is_string(e)) {
                        free(v);
                        return -EINVAL;
                }
                v[i] = json_string_value(e);
        }
        *ret_v = v;
        *ret_n = json_array_size(a);
        return 0;
}

static int warm_up(Compiler *c)
{
        CompileJob cuda = { .language = "cuda", .source = warmup_cuda, .source_len = strlen(warmup_cuda) };
        CompileJob ptx = { .language = "ptx", .source = warmup_ptx, .source_len = strlen(warmup_ptx) };
        CompileOutput out = { 0 };
        int r;

        r = compile_run(c, &cuda, &out);
        if (r == 0 && !json_is_true(json_object_get(out.result, "ok"))) {
                log_error("compile: the warm-up kernel did not compile: %s",
                          json_string_value(json_object_get(out.result, "log")));
                r = -EIO;
        }
        compile_output_clear(&out);
        if (r != 0)
                return r;
        r = compile_run(c, &ptx, &out);
        if (r == 0 && !json_is_true(json_object_get(out.result, "ok"))) {
                log_error("compile: the warm-up PTX did not link: %s",
                          json_string_value(json_object_get(out.result, "log")));
                r = -EIO;
        }
        compile_output_clear(&out);
        return r;
}

/*
 * A group JOB: "group" lists the lengths of the sources the blob holds one
 * after another, all with the JOB's language, arch and options
 * (compile_run_group()); one RESULT per source, in order, each with
 * "member": its index. Past the deadline the watchdog sends one RESULT
 * with "group_timeout": true for all of them, and the worker exits.
 * Return: as handle_job().
 */
static int handle_group(Compiler *c, json_t *id, const CompileJob *base, json_t *group, const Frame *f,
                        long deadline_ms)
{
        CompileJob jobs[COMPILE_GROUP_MAX];
        CompileOutput outs[COMPILE_GROUP_MAX];
        size_t n = json_array_size(group), off = 0, merged = 0;
        char *timeout_text = NULL;
        json_t *tr, *e;
        size_t i;
        int r;

        if (!json_is_array(group) || n < 1 || n > COMPILE_GROUP_MAX)
                return WORKER_EXIT_PROTOCOL;
        json_array_foreach(group, i, e) {
                if (!json_is_integer(e) || json_integer_value(e) < 0 ||
                    (uint64_t)json_integer_value(e) > f->blob_len - off)
                        return WORKER_EXIT_PROTOCOL;
                jobs[i] = *base;
                jobs[i].source = (const char *)f->blob + off;
                jobs[i].source_len = (size_t)json_integer_value(e);
                off += jobs[i].source_len;
        }
        if (off != f->blob_len)
                return WORKER_EXIT_PROTOCOL;
        tr = compile_timeout_result(base->arch, (double)deadline_ms, compile_nvrtc_version(c));
        if (!tr || json_object_set(tr, "id", id) || json_object_set_new(tr, "group_timeout", json_true()) ||
            !(timeout_text = json_dumps(tr, JSON_COMPACT))) {
                json_decref(tr);
                return -ENOMEM;
        }
        json_decref(tr);
        (void)sandbox_rearm_cpu(LIMIT_COMPILE_CPU_S);
        watchdog_arm(deadline_ms, timeout_text);
        r = compile_run_group(c, jobs, n, next_group_tag(), outs, &merged);
        if (r != 0) {
                json_t *res;
                log_error("compile: group job %lld: %s", (long long)json_integer_value(id), strerror(-r));
                res = compile_internal_result(base->arch, compile_nvrtc_version(c));
                if (res && json_object_set(res, "id", id)) {
                        json_decref(res);
                        res = NULL;
                }
                for (i = 0; res && i < n; i++)
                        if (json_object_set_new(res, "member", json_integer((json_int_t)i)) ||
                            send_result(res, NULL, 0) != 0)
                                break;
                json_decref(res);
                (void)sandbox_rearm_cpu(0);
                return r;
        }
        for (i = 0; i < n; i++) {
                if (r == 0 && (json_object_set(outs[i].result, "id", id) ||
                               json_object_set_new(outs[i].result, "member", json_integer((json_int_t)i))))
                        r = -ENOMEM;
                if (r == 0 && (r = send_output(&outs[i])) != 0)
                        log_error("compile: writing a group RESULT failed: %s", strerror(-r));
                compile_output_clear(&outs[i]);
        }
        (void)sandbox_rearm_cpu(0);
        log_debug("compile: group job %lld: %zu sources, %zu merged", (long long)json_integer_value(id), n, merged);
        return r;
}

/*
 * One JOB frame (the frame loop's handler; @ctx the Compiler). Return: 0 when
 * answered, WORKER_EXIT_PROTOCOL for a malformed JOB, or a negative errno
 * after an "internal" RESULT was attempted.
 */
static int handle_job(void *ctx, const Frame *f)
{
        Compiler *c = ctx;
        json_error_t jerr;
        json_t *job = json_loadb(f->json, f->json_len, JSON_REJECT_DUPLICATES, &jerr), *v, *tr = NULL;
        json_t *id, *res = NULL;
        CompileJob cj = { 0 };
        CompileOutput out = { 0 };
        long deadline_ms = LIMIT_COMPILE_WALL_MS;
        char *timeout_text = NULL;
        int r = 0;

        if (!job || !json_is_object(job)) {
                log_error("compile: JOB is not a JSON object: %s", job ? "wrong type" : jerr.text);
                r = WORKER_EXIT_PROTOCOL;
                goto out;
        }
        id = json_object_get(job, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0) {
                log_error("compile: JOB without a valid \"id\"");
                r = WORKER_EXIT_PROTOCOL;
                goto out;
        }
        v = json_object_get(job, "language");
        if (v && !json_is_string(v))
                goto bad;
        cj.language = v ? json_string_value(v) : "cuda";
        v = json_object_get(job, "arch");
        if (v && !json_is_null(v) && !json_is_string(v))
                goto bad;
        cj.arch = json_is_string(v) ? json_string_value(v) : COMPILE_ARCH_DEFAULT;
        v = json_object_get(job, "deadline_ms");
        if (v && !json_is_null(v)) {
                if (!json_is_number(v) || json_number_value(v) <= 0)
                        goto bad;
                if (json_number_value(v) < LIMIT_COMPILE_WALL_MS)
                        deadline_ms = (long)json_number_value(v);
                if (deadline_ms < 1)
                        deadline_ms = 1;
        }
        v = json_object_get(job, "fence");
        if (v && !json_is_boolean(v))
                goto bad;
        cj.no_fence = json_is_false(v);
        r = string_array(job, "options", (const char ***)&cj.options, &cj.n_options);
        if (r == 0)
                r = string_array(job, "name_expressions", (const char ***)&cj.name_expressions,
                                 &cj.n_name_expressions);
        if (r == -EINVAL)
                goto bad;
        if (r != 0)
                goto out;
        cj.source = f->blob ? (const char *)f->blob : "";
        cj.source_len = f->blob_len;
        v = json_object_get(job, "group");
        if (v && !json_is_null(v)) {
                r = handle_group(c, id, &cj, v, f, deadline_ms);
                goto out;
        }
        tr = compile_timeout_result(cj.arch, (double)deadline_ms, compile_nvrtc_version(c));
        if (!tr || json_object_set(tr, "id", id)) {
                r = -ENOMEM;
                goto out;
        }
        timeout_text = json_dumps(tr, JSON_COMPACT);
        if (!timeout_text) {
                r = -ENOMEM;
                goto out;
        }
        (void)sandbox_rearm_cpu(LIMIT_COMPILE_CPU_S);
        watchdog_arm(deadline_ms, timeout_text);
        r = compile_run(c, &cj, &out);
        if (r != 0) {
                log_error("compile: job %lld: %s", (long long)json_integer_value(id), strerror(-r));
                res = compile_internal_result(cj.arch, compile_nvrtc_version(c));
                if (res && json_object_set(res, "id", id) == 0)
                        (void)send_result(res, NULL, 0);
                goto out;
        }
        if (json_object_set(out.result, "id", id)) {
                r = -ENOMEM;
                goto out;
        }
        r = send_output(&out);
        if (r != 0)
                log_error("compile: writing the RESULT failed: %s", strerror(-r));
        (void)sandbox_rearm_cpu(0);
        if (out.raw_log && *out.raw_log)
                log_debug("compile: job %lld: raw log: %s", (long long)json_integer_value(id),
                          out.raw_log);
        log_debug("compile: job %lld: ok=%d %.1f ms", (long long)json_integer_value(id),
                  json_is_true(json_object_get(out.result, "ok")),
                  json_number_value(json_object_get(out.result, "compile_ms")));
        goto out;
bad:
        log_error("compile: JOB has a field of the wrong type");
        r = WORKER_EXIT_PROTOCOL;
out:
        compile_output_clear(&out);
        json_decref(res);
        json_decref(tr);
        json_decref(job);
        free((void *)cj.options);
        free((void *)cj.name_expressions);
        return r;
}

/*
 * After each answered JOB (the frame loop's done()): is the worker's lifetime
 * CPU budget (RLIMIT_CPU hard) nearly spent? Then it exits 0 for a fresh one.
 */
static bool cpu_budget_low(void *ctx)
{
        struct rlimit rl;
        struct rusage ru;
        double used;

        (void)ctx;
        if (getrlimit(RLIMIT_CPU, &rl) != 0 || rl.rlim_max == RLIM_INFINITY ||
            getrusage(RUSAGE_SELF, &ru) != 0)
                return false;
        used = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec;
        if (used + 2.0 * LIMIT_COMPILE_CPU_S < (double)rl.rlim_max)
                return false;
        log_info("compile: CPU lifetime budget nearly spent: exiting for a fresh worker");
        return true;
}

/*
 * NVRTC allocates and frees tens of MB per program. With glibc's defaults
 * the large blocks are mmap()ed and unmapped and the heap's top is trimmed
 * after every compile, so the next compile faults every page in again: 3-4
 * ms of system time in a 23-27 ms compile (1,660 page faults; session 18,
 * NVRTC 13.0). Blocks up to 64 MiB from the heap, trimmed only above 64
 * MiB free, grown 16 MiB at a time: the pages stay mapped between jobs (7
 * faults a compile), for ~5 MB more resident memory. Within
 * LIMIT_COMPILE_AS_BYTES either way: the address space a compile uses is
 * the same, only held longer.
 */
static void keep_heap(void)
{
        (void)mallopt(M_MMAP_THRESHOLD, 64 << 20);
        (void)mallopt(M_TRIM_THRESHOLD, 64 << 20);
        (void)mallopt(M_TOP_PAD, 16 << 20);
}

int main(int argc, char **argv)
{
        SandboxProfile profile = SANDBOX_PROFILE_COMPILE;
        SandboxReport report = { 0 };
        Compiler *c = NULL;
        const char *level = getenv("KEVALD_LOG_LEVEL");
        LogLevel lvl = LOG_LEVEL_INFO;
        json_t *hello = NULL;
        WorkerLoop loop = { .role = "compile", .fd = STDIN_FILENO, .handlers = { [FRAME_JOB] = handle_job },
                            .done = cpu_budget_low };
        int r, status = WORKER_EXIT_FAILED;

        if (level)
                (void)log_level_parse(level, &lvl);
        log_init("kevald-compile", lvl);
        keep_heap();
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--no-sandbox") == 0) {
                        profile = SANDBOX_PROFILE_NONE;
                } else {
                        fprintf(stderr, "usage: kevald-compile [--no-sandbox]\n"
                                        "  speaks the kevald child protocol on stdin/stdout\n");
                        return 2;
                }
        }

        if (getrandom(group_secret, sizeof(group_secret), 0) != (ssize_t)sizeof(group_secret)) {
                log_error("compile: getrandom failed: %s", strerror(errno));
                return WORKER_EXIT_FAILED;
        }
        r = sandbox_enter(profile, NULL, 0, &report);
        if (r < 0)
                goto out;
        r = compile_open(getenv("KEVALD_CUDA_HOME"), &c);
        if (r < 0) {
                log_error("compile: the CUDA toolkit's include folder was not found: %s", strerror(-r));
                goto out;
        }
        r = warm_up(c);
        if (r < 0)
                goto out;
        r = watchdog_start();
        if (r < 0) {
                log_error("compile: starting the watchdog thread: %s", strerror(-r));
                goto out;
        }
        r = sandbox_lock(profile, &report);
        if (r < 0)
                goto out;
        hello = json_pack("{s:s, s:i, s:s, s:s, s:O?}", "role", "compile", "pid", (int)getpid(),
                          "nvrtc", compile_nvrtc_version(c), "arch_default", COMPILE_ARCH_DEFAULT,
                          "layers", report.layers);
        if (!hello || send_frame(FRAME_HELLO, hello) != 0) {
                log_error("compile: sending HELLO failed");
                goto out;
        }

        loop.ctx = c;
        status = workerloop_run(&loop);
out:
        json_decref(hello);
        compile_close(c);
        sandbox_report_clear(&report);
        /* The watchdog thread may be waiting on out_lock: leave without joining it. */
        fflush(stderr);
        _exit(status);
}
