/*
 * kevald-gpu - the GPU worker (docs/internals.md, "GPU worker"). Frames
 * arrive on fd 0 and leave on a private copy of fd 1.
 *
 * Start-up order matters:
 *   1. fd 1 is duplicated to a private descriptor for frames, and fd 1 is
 *      pointed at /dev/null, BEFORE cuInit: the driver writes device printf
 *      output to the process's stdout, and a kernel must never be able to
 *      write into the protocol stream;
 *   2. the driver version is read from /proc (before the sandbox hides it),
 *      NVIDIA_TF32_OVERRIDE=0 is set (strict FP32 in cuBLAS, see blas.h);
 *   3. sandbox_enter() (keeping the frame descriptor);
 *   4. cuInit, the primary context of KEVALD_GPU_INDEX (default 0), the
 *      printf FIFO bound (LIMIT_PRINTF_FIFO_BYTES), the trusted helper
 *      fatbin, cuBLAS (handle, workspace; its kernels load at their first
 *      use), events, a first launch, and the L2 flush buffer;
 *   5. sandbox_lock() (seccomp, TSYNC);
 *   6. HELLO; then one RESULT per JOB until EOF or SHUTDOWN (the frame
 *      loop both workers share, worker/workerloop.h, calling handle_job()).
 * If start-up fails, the HELLO carries "ok": false and an error, and the
 * worker exits 1. After a sticky CUDA error or a timeout the worker sends
 * its RESULT and exits (3 and 4): the supervisor starts a fresh one.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/limits.h"
#include "common/log.h"
#include "worker/gpu/blas.h"
#include "worker/gpu/devmem.h"
#include "worker/exitcode.h"
#include "worker/gpu/gpu.h"
#include "worker/gpu/judge.h"
#include "worker/workerloop.h"

#ifdef KEVALD_HAVE_SANDBOX
#include "sandbox/sandbox.h"
#endif

extern const struct {
        const char *name;
        const unsigned char *data;
        unsigned long len;
} kevald_device_fatbin[];

static int out_fd = -1;

static int send_json(uint32_t type, json_t *j)
{
        char *s = json_dumps(j, JSON_COMPACT);
        int r;

        if (!s)
                return -ENOMEM;
        r = frame_write(out_fd, type, s, strlen(s), NULL, 0);
        free(s);
        return r;
}

static void progress(void *userdata, int64_t job_id, const char *phase, const char *shape)
{
        json_t *j = json_pack("{s:I, s:s, s:s}", "id", (json_int_t)job_id, "phase", phase, "shape", shape);

        (void)userdata;
        if (j && send_json(FRAME_PROGRESS, j) < 0)
                log_warn("gpu: cannot send PROGRESS");
        json_decref(j);
}

static int dump_piece(void *userdata, int64_t job_id, const char *shape, const char *buffer, const char *when,
                      uint64_t offset, uint64_t total, const void *data, size_t len)
{
        json_t *j = json_pack("{s:I, s:{s:s, s:s, s:s, s:I, s:I}}", "id", (json_int_t)job_id, "dump", "shape", shape,
                              "buffer", buffer, "when", when, "offset", (json_int_t)offset, "total", (json_int_t)total);
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        int r = s ? frame_write(out_fd, FRAME_PROGRESS, s, strlen(s), data, len) : -ENOMEM;

        (void)userdata;
        free(s);
        json_decref(j);
        return r;
}

/* Step 1: frames get their own descriptor; fd 1 becomes /dev/null. */
static int protect_stdout(void)
{
        int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3), null_fd;

        if (fd < 0)
                return -errno;
        null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null_fd < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        if (dup2(null_fd, STDOUT_FILENO) < 0) {
                int e = errno;
                close(fd);
                close(null_fd);
                return -e;
        }
        close(null_fd);
        out_fd = fd;
        return 0;
}

static void hello_fail(json_t *layers, const char *what, int rc)
{
        const GpuError *e = gpu_error_last();
        json_t *h = json_pack("{s:s, s:i, s:b, s:O, s:{s:s, s:s, s:s}}", "role", "gpu", "pid", (int)getpid(), "ok", 0,
                              "layers", layers ? layers : json_null(), "error", "stage", what, "name",
                              rc == GPU_E_CUDA ? e->name : rc < 0 ? "errno" : "KEVALD_ERROR", "message",
                              rc == GPU_E_CUDA ? e->message : rc < 0 ? strerror(-rc) : "start-up failed");

        log_error("gpu: start-up failed at %s: %s", what, rc == GPU_E_CUDA ? e->name : strerror(rc < 0 ? -rc : EIO));
        if (h)
                send_json(FRAME_HELLO, h);
        json_decref(h);
}

/* Start-up phases, in ms: where a restart's time goes (HELLO "startup_ms"). */
static const char *const phase_names[] = { "sandbox", "cuda_init", "helpers", "cublas", "flush", "lock" };
static double phase_ms[6];
static int64_t phase_t0;

static void phase_done(int i)
{
        int64_t now = gpu_now_ns();

        phase_ms[i] = (double)(now - phase_t0) / 1e6;
        phase_t0 = now;
}

static json_t *startup_json(void)
{
        json_t *o = json_object();

        for (size_t i = 0; i < sizeof(phase_ms) / sizeof(phase_ms[0]); i++)
                json_object_set_new(o, phase_names[i], json_real(phase_ms[i]));
        return o;
}

static json_t *hello_json(const GpuInfo *info, json_t *layers, size_t flush_bytes)
{
        char cc[16];

        snprintf(cc, sizeof(cc), "%d.%d", info->cc_major, info->cc_minor);
        return json_pack("{s:s, s:i, s:b, s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:i, s:i, s:i, s:i, s:s, s:O, "
                         "s:{s:I, s:I, s:i}}",
                         "role", "gpu", "pid", (int)getpid(), "ok", 1, "device", info->index, "name", info->name, "cc",
                         cc, "arch", info->arch, "driver", info->driver, "cuda_driver", info->cuda_driver, "sms",
                         info->sms, "memory_bytes", (json_int_t)info->memory_bytes, "l2_bytes", info->l2_bytes,
                         "max_shared_optin", info->max_shared_optin, "max_threads_per_block",
                         info->max_threads_per_block, "max_threads_per_sm", info->max_threads_per_sm, "cublas",
                         blas_version(), "layers", layers, "worker", "printf_fifo_bytes",
                         (json_int_t)LIMIT_PRINTF_FIFO_BYTES, "l2_flush_bytes", (json_int_t)flush_bytes,
                         "guard_bytes", (int)DEVMEM_GUARD_BYTES);
}

static int device_index(void)
{
        const char *s = getenv("KEVALD_GPU_INDEX");
        char *end = NULL;
        long v;

        if (!s || !*s)
                return 0;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || v < 0 || v > 63)
                return -1;
        return (int)v;
}

/*
 * One JOB frame (the frame loop's handler, worker/workerloop.h; @ctx the
 * JudgeEnv): judged (judge_run()) and answered with its RESULT; a JOB that
 * is not JSON gets an "internal_error" RESULT and the loop goes on. After a
 * timeout or a sticky CUDA error the RESULT says "exiting" and the process
 * ends at once with _exit(), not through the loop: a kernel may still spin.
 * Return: 0 when answered, WORKER_EXIT_FAILED when the supervisor cannot be
 * answered.
 */
static int handle_job(void *ctx, const Frame *f)
{
        const JudgeEnv *env = ctx;
        json_t *job;
        json_error_t jerr;
        JudgeOutcome oc = { 0 };
        int r;

        job = json_loadb(f->json, f->json_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!job) {
                json_t *res = json_pack("{s:s, s:n, s:{s:s, s:s}}", "verdict", "internal_error", "timing", "error",
                                        "kind", "internal", "message", "the JOB is not valid JSON");
                log_error("gpu: JOB is not JSON: %s", jerr.text);
                r = send_json(FRAME_RESULT, res);
                json_decref(res);
                return r < 0 ? WORKER_EXIT_FAILED : 0;
        }
        judge_run(env, job, f->blob, f->blob_len, &oc);
        json_decref(job);
        /* "timeout": work may still be running on the GPU until this
         * process is gone, so the supervisor keeps the GPU reserved
         * until then; "sticky": the context is dead, nothing runs */
        if (oc.must_exit || gpu_is_sticky())
                json_object_set_new(oc.result, "exiting",
                                    json_string(oc.exit_code == WORKER_EXIT_TIMEOUT ? "timeout" : "sticky"));
        r = send_json(FRAME_RESULT, oc.result);
        json_decref(oc.result);
        if (r < 0) {
                log_error("gpu: cannot send RESULT: %s", strerror(-r));
                return WORKER_EXIT_FAILED;
        }
        if (oc.must_exit || gpu_is_sticky()) {
                log_warn("gpu: exiting after a %s", oc.exit_code == WORKER_EXIT_TIMEOUT ? "timeout" : "sticky CUDA error");
                _exit(oc.exit_code ? oc.exit_code : WORKER_EXIT_STICKY); /* no atexit: a kernel may still spin */
        }
        return 0;
}

int main(int argc, char **argv)
{
        GpuInfo info;
        JudgeEnv env;
        WorkerLoop loop = { .role = "gpu", .fd = STDIN_FILENO, .handlers = { [FRAME_JOB] = handle_job } };
        LogLevel level = LOG_LEVEL_INFO;
        json_t *layers = NULL;
        GpuPtr flush = 0;
        size_t flush_bytes;
        char driver[64];
        bool sandbox = true;
        int r, index;
#ifdef KEVALD_HAVE_SANDBOX
        SandboxReport report = { 0 };
#endif

        if (getenv("KEVALD_LOG_LEVEL"))
                (void)log_level_parse(getenv("KEVALD_LOG_LEVEL"), &level);
        log_init("kevald-gpu", level);
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--no-sandbox") == 0) {
                        sandbox = false;
                } else {
                        fprintf(stderr, "usage: kevald-gpu [--no-sandbox]  (frames on fds 0 and 1)\n");
                        return 2;
                }
        }
        signal(SIGPIPE, SIG_IGN);
        phase_t0 = gpu_now_ns();
        if ((r = protect_stdout()) < 0) {
                log_error("gpu: cannot move the protocol off fd 1: %s", strerror(-r));
                return 1;
        }
        gpu_driver_version_read(driver, sizeof(driver));
        setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
        index = device_index();

#ifdef KEVALD_HAVE_SANDBOX
        r = sandbox_enter(sandbox ? SANDBOX_PROFILE_GPU : SANDBOX_PROFILE_NONE, &out_fd, 1, &report);
        layers = report.layers ? json_incref(report.layers) : json_object();
        if (r < 0) {
                hello_fail(layers, "sandbox_enter", r);
                return 1;
        }
#else
        (void)sandbox;
        layers = json_pack("{s:{s:b, s:s}}", "sandbox", "active", 0, "detail", "not built into this binary");
#endif
        if (index < 0) {
                hello_fail(layers, "KEVALD_GPU_INDEX", -EINVAL);
                return 1;
        }
        phase_done(0);
        if ((r = gpu_init(index, &info))) {
                hello_fail(layers, "gpu_init", r);
                return 1;
        }
        phase_done(1);
        snprintf(info.driver, sizeof(info.driver), "%s", driver);
        if ((r = gpu_limit_printf_fifo(LIMIT_PRINTF_FIFO_BYTES))) {
                hello_fail(layers, "printf_fifo", r);
                return 1;
        }
        if ((r = devmem_init(kevald_device_fatbin[0].data, kevald_device_fatbin[0].len, info.sms))) {
                hello_fail(layers, "device_helpers", r);
                return 1;
        }
        if ((r = judge_init()) || (r = devmem_warm())) {
                hello_fail(layers, "warm_launch", r);
                return 1;
        }
        phase_done(2);
        if ((r = blas_init(gpu_stream_handle()))) {
                hello_fail(layers, "cublas", r);
                return 1;
        }
        phase_done(3);
        /* the L2 flush buffer: at least twice the L2, at least 64 MiB */
        flush_bytes = (size_t)info.l2_bytes * 2;
        if (flush_bytes < (64u << 20))
                flush_bytes = 64u << 20;
        flush_bytes &= ~(size_t)15;
        if ((r = gpu_alloc(flush_bytes, &flush)) || (r = gpu_memset32(flush, 0, flush_bytes / 4)) ||
            (r = gpu_stream_wait())) {
                hello_fail(layers, "l2_flush_buffer", r);
                return 1;
        }
        phase_done(4);
#ifdef KEVALD_HAVE_SANDBOX
        r = sandbox_lock(sandbox ? SANDBOX_PROFILE_GPU : SANDBOX_PROFILE_NONE, &report);
        json_decref(layers);
        layers = report.layers ? json_incref(report.layers) : json_object();
        if (r < 0) {
                hello_fail(layers, "sandbox_lock", r);
                return 1;
        }
#endif
        phase_done(5);
        {
                json_t *h = hello_json(&info, layers, flush_bytes);
                if (h)
                        json_object_set_new(h, "startup_ms", startup_json());
                r = h ? send_json(FRAME_HELLO, h) : -ENOMEM;
                json_decref(h);
                if (r < 0) {
                        log_error("gpu: cannot send HELLO: %s", strerror(-r));
                        return 1;
                }
        }
        log_info("gpu: ready on device %d (%s, cc %d.%d, %d SMs, driver %s); start-up ms: sandbox %.0f, cuda_init %.0f, "
                 "helpers %.0f, cublas %.0f, flush %.0f, lock %.0f",
                 info.index, info.name, info.cc_major, info.cc_minor, info.sms, info.driver[0] ? info.driver : "?",
                 phase_ms[0], phase_ms[1], phase_ms[2], phase_ms[3], phase_ms[4], phase_ms[5]);

        memset(&env, 0, sizeof(env));
        env.info = &info;
        env.flush = flush;
        env.flush_bytes = flush_bytes;
        env.progress = progress;
        env.dump = dump_piece;
        loop.ctx = &env;
        if ((r = workerloop_run(&loop)) != 0)
                return r;
        log_info("gpu: shutting down");
        gpu_deadline_set(gpu_now_ns() + 10LL * 1000000000LL);
        if (gpu_memset8(flush, 0, flush_bytes) == 0 && gpu_stream_wait() == 0)
                (void)gpu_free(flush);
        json_decref(layers);
#ifdef KEVALD_HAVE_SANDBOX
        sandbox_report_clear(&report);
#endif
        return 0;
}
