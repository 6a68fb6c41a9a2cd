/*
 * compile - see compile.h. The only file that includes <nvrtc.h> and
 * <nvJitLink.h>; their status codes end here.
 *
 * One job: checks (size, UTF-8, options; #include directives and host code
 * in compile_scan.c),
 * then NVRTC (CUDA C++) or nvJitLink (PTX) with our own options appended, then the
 * CUBIN is parsed (cubin.c) and joined with the ptxas -v report
 * (logtrim.c) into the per-kernel resource report. Every expected failure
 * becomes a RESULT with ok false and an error kind; only infrastructure
 * failures (out of memory) come back as a negative errno.
 *
 * Options we add to NVRTC: -arch=<arch>, -I<cuda>/include,
 * -I<cuda>/include/cccl (CUDA 13 keeps libcu++/CUB/Thrust there),
 * -include kevald_prelude.h (with the standard header shims as in-memory
 * headers: worker/compile/stdshim.h; -D__KEVALD_LIBCUDACXX=1|2 for a source that
 * includes libcu++, --diag-suppress=47 for one that redefines a macro of
 * the prelude: see run_nvrtc()),
 * -lineinfo (the source lines of the fenced build's sites; ptxas emits the
 * same SASS with it: checked section by section on every task kernel) and
 * --ptxas-options=-v (the resource report; its lines never reach the
 * client). Client -O<n> is passed as --ptxas-options=-O<n> (NVRTC itself
 * has no -O). For PTX, nvJitLink gets -arch=<arch> and -Xptxas=-v plus the
 * client options that mean something to it (-ftz, -prec-div, -prec-sqrt,
 * -fmad as -fma, -use_fast_math as those four, -maxrregcount,
 * -lineinfo, -O<n> as -Xptxas=-O<n>); C++ front-end options are ignored
 * with a note in the log.
 *
 * Every successful compile also yields a fenced build (worker/compile/fence.h):
 * the same PTX (NVRTC's, or the submission) through fence_ptx() and
 * nvJitLink with the same ptxas options. It is best effort: a module the
 * pass refuses, or fenced PTX that does not link, leaves the plain CUBIN
 * alone, with the reason in result.fence.error, and the GPU worker then
 * runs the plain build in every phase.
 */
#include "worker/compile/compile.h"

#include <errno.h>
#include <limits.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/limits.h"
#include "common/log.h"
#include "common/options.h"
#include "worker/compile/compile_scan.h"
#include "worker/cubin.h"
#include "worker/compile/fence.h"
#include "worker/compile/group.h"
#include "worker/compile/logtrim.h"
#include "worker/compile/stdshim.h"

#define COMPILE_INCLUDE_DIRS 2
#define COMPILE_MSG_BYTES 2048
#define COMPILE_NAME_MAP "__nv_name_map" /* where NVRTC reports name-expression errors */

struct Compiler {
        char *include_dirs[COMPILE_INCLUDE_DIRS]; /* realpaths */
        char *include_opts[COMPILE_INCLUDE_DIRS]; /* "-I<dir>" */
        size_t n_include_dirs;
        char *trusted[2 * COMPILE_INCLUDE_DIRS];  /* "<dir>/" as given and resolved */
        size_t n_trusted;
        char nvrtc_version[16];
};

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
        va_list ap;
        char *s = NULL;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        return n < 0 ? NULL : s;
}

/**
 * compile_open() - set up a Compiler for the toolkit at @cuda_home
 * @cuda_home:    the CUDA root (its include/ and include/cccl/ are used);
 *                NULL for /usr/local/cuda; borrowed
 * @ret_compiler: on success, a new Compiler; free with compile_close()
 *
 * Return: 0, -ENOENT when @cuda_home has no include/ folder, or -ENOMEM.
 */
int compile_open(const char *cuda_home, Compiler **ret_compiler)
{
        Compiler *c;
        int major = 0, minor = 0, r = 0;
        const char *sub[COMPILE_INCLUDE_DIRS] = { "include", "include/cccl" };

        if (!cuda_home || !*cuda_home)
                cuda_home = "/usr/local/cuda";
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < COMPILE_INCLUDE_DIRS; i++) {
                char *given = xasprintf("%s/%s", cuda_home, sub[i]);
                char *real;
                if (!given) {
                        r = -ENOMEM;
                        goto out;
                }
                real = realpath(given, NULL);
                if (!real) {
                        free(given);
                        if (i == 0) {
                                r = -ENOENT;
                                goto out;
                        }
                        continue; /* no cccl/ before CUDA 13 */
                }
                c->include_dirs[c->n_include_dirs] = real;
                c->include_opts[c->n_include_dirs] = xasprintf("-I%s", real);
                c->trusted[c->n_trusted++] = xasprintf("%s/", real);
                c->trusted[c->n_trusted++] = xasprintf("%s/", given);
                free(given);
                if (!c->include_opts[c->n_include_dirs] || !c->trusted[c->n_trusted - 1] ||
                    !c->trusted[c->n_trusted - 2]) {
                        c->n_include_dirs++;
                        r = -ENOMEM;
                        goto out;
                }
                c->n_include_dirs++;
        }
        if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
                major = 0;
                minor = 0;
        }
        snprintf(c->nvrtc_version, sizeof(c->nvrtc_version), "%d.%d", major, minor);
        *ret_compiler = c;
        c = NULL;
out:
        compile_close(c);
        return r;
}

/** compile_close() - free a Compiler; accepts NULL. */
void compile_close(Compiler *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < COMPILE_INCLUDE_DIRS; i++) {
                free(c->include_dirs[i]);
                free(c->include_opts[i]);
        }
        for (size_t i = 0; i < 2 * COMPILE_INCLUDE_DIRS; i++)
                free(c->trusted[i]);
        free(c);
}

/** compile_nvrtc_version() - "13.0"; borrowed from @c. */
const char *compile_nvrtc_version(const Compiler *c)
{
        return c->nvrtc_version;
}

/**
 * compile_check_source() - the #include rules and the host code check (see
 * compile.h) for a CUDA C++ source that is already known to be UTF-8
 * without NUL bytes, against @c's include folders: compile_scan_source()
 * (worker/compile/compile_scan.h), whose comment says what is refused and what
 * @ret_flags, @msg and @msglen receive.
 * @c: the compiler (its include folders); borrowed
 *
 * Return: 0, COMPILE_E_REJECTED, or -ENOMEM.
 */
static CompileScanDirs scan_dirs(const Compiler *c)
{
        return (CompileScanDirs){ .include_dirs = (const char *const *)c->include_dirs,
                                  .n_include_dirs = c->n_include_dirs };
}

int compile_check_source(const Compiler *c, const char *src, size_t len, unsigned *ret_flags,
                         char *msg, size_t msglen)
{
        CompileScanDirs dirs = scan_dirs(c);

        return compile_scan_source(&dirs, src, len, ret_flags, msg, msglen);
}

/* ---- results --------------------------------------------------------------- */

static json_t *result_new(const Compiler *c, const char *arch)
{
        return json_pack("{s:b, s:s, s:b, s:f, s:s, s:s, s:{}, s:[], s:n}", "ok", 0, "log", "",
                         "log_truncated", 0, "compile_ms", 0.0, "nvrtc", c->nvrtc_version, "arch",
                         arch, "lowered_names", "kernels", "error");
}

/* Finish a failed result: @error kind, @log shown as is (already client-safe). */
static int result_fail(json_t *res, const char *error, const char *log)
{
        if (json_object_set_new(res, "ok", json_false()) ||
            json_object_set_new(res, "error", json_string(error)) ||
            json_object_set_new(res, "log", json_string(log ? log : "")))
                return -ENOMEM;
        return 0;
}

/**
 * compile_timeout_result() - the RESULT (without "id") for a job that ran
 * past its deadline; used by the watchdog, so it allocates but takes no lock
 * @arch:          the job's target
 * @deadline_ms:   the limit it broke
 * @nvrtc_version: "13.0"
 *
 * Return: a new JSON object, or NULL on allocation failure.
 */
json_t *compile_timeout_result(const char *arch, double deadline_ms, const char *nvrtc_version)
{
        char log[256];

        snprintf(log, sizeof(log),
                 "compilation exceeded the %g s limit (e.g. runaway template instantiation or "
                 "macro expansion)", deadline_ms / 1000.0);
        return json_pack("{s:b, s:s, s:b, s:f, s:s, s:s, s:{}, s:[], s:s}", "ok", 0, "log", log,
                         "log_truncated", 0, "compile_ms", deadline_ms, "nvrtc",
                         nvrtc_version ? nvrtc_version : "", "arch", arch ? arch : "",
                         "lowered_names", "kernels", "error", "timeout");
}

/**
 * compile_internal_result() - the RESULT (without "id") of a job the worker
 * itself failed (compile_run() gave -ENOMEM or -EIO)
 * @arch:          the job's target
 * @nvrtc_version: "13.0"
 *
 * Return: a new JSON object, or NULL on allocation failure.
 */
json_t *compile_internal_result(const char *arch, const char *nvrtc_version)
{
        return json_pack("{s:b, s:s, s:s, s:b, s:f, s:s, s:s, s:{}, s:[]}", "ok", 0, "error", "internal", "log",
                         "internal error in the compile worker", "log_truncated", 0, "compile_ms", 0.0, "nvrtc",
                         nvrtc_version ? nvrtc_version : "", "arch", arch ? arch : "", "lowered_names", "kernels");
}

static bool arch_valid(const char *a)
{
        size_t n, d = 0;

        if (!a || strncmp(a, "sm_", 3) != 0)
                return false;
        n = strlen(a);
        for (size_t i = 3; i < n; i++) {
                if (a[i] >= '0' && a[i] <= '9')
                        d++;
                else if (i + 1 == n && d >= 2 && (a[i] == 'a' || a[i] == 'f'))
                        return true;
                else
                        return false;
        }
        return d >= 2 && d <= 3;
}

static bool name_expression_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > LIMIT_NAME_BYTES)
                return false;
        for (size_t i = 0; i < n; i++) {
                char ch = s[i];
                if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                      strchr("_:<>,()*& .+-[]", ch)))
                        return false;
        }
        return true;
}

static json_t *kernel_json(const CubinKernel *k, const PtxasKernel *px)
{
        json_t *params = json_array(), *o;
        int64_t regs, shared, local, stack;

        if (!params)
                return NULL;
        for (size_t i = 0; i < k->n_params; i++)
                if (json_array_append_new(params, json_pack("{s:I, s:I}", "offset",
                                                            (json_int_t)k->params[i].offset, "size",
                                                            (json_int_t)k->params[i].size))) {
                        json_decref(params);
                        return NULL;
                }
        regs = k->registers >= 0 ? k->registers : (px && px->registers >= 0 ? px->registers : 0);
        if (px)
                shared = px->smem >= 0 ? px->smem : 0;
        else
                shared = k->shared_section > 0 ? k->shared_section : 0;
        local = px && px->stack_frame >= 0 ? px->stack_frame : (k->frame_bytes >= 0 ? k->frame_bytes : 0);
        stack = px && px->stack >= 0 ? px->stack : (k->stack_bytes >= 0 ? k->stack_bytes : local);
        o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name", k->name, "params",
                      params, "registers", (json_int_t)regs, "shared_static", (json_int_t)shared,
                      "local", (json_int_t)local, "spill_stores",
                      (json_int_t)(px && px->spill_stores >= 0 ? px->spill_stores : 0), "spill_loads",
                      (json_int_t)(px && px->spill_loads >= 0 ? px->spill_loads : 0), "stack",
                      (json_int_t)stack, "barriers",
                      (json_int_t)(px && px->barriers >= 0 ? px->barriers : 0),
                      "max_threads_per_block",
                      (json_int_t)(k->max_threads > 0 ? k->max_threads : 1024));
        return o;
}

/* Fill "kernels" from the CUBIN and the ptxas report; CUBIN_E_MALFORMED passes up. */
static int fill_kernels(json_t *res, const uint8_t *cubin, size_t len, const char *raw_log)
{
        CubinInfo *info = NULL;
        PtxasKernel *px = NULL;
        size_t n_px = 0;
        json_t *arr = json_object_get(res, "kernels");
        int r;

        r = cubin_parse(cubin, len, &info);
        if (r != 0)
                goto out;
        r = logtrim_parse_ptxas(raw_log, &px, &n_px);
        if (r != 0)
                goto out;
        for (size_t i = 0; i < info->n_kernels; i++) {
                const CubinKernel *k = &info->kernels[i];
                size_t nlen = strlen(k->name);
                if (logtrim_utf8_prefix((const unsigned char *)k->name, nlen) != nlen) {
                        log_warn("compile: a kernel name in the CUBIN is not UTF-8: left out");
                        continue;
                }
                if (json_array_append_new(arr, kernel_json(k, logtrim_find_ptxas(px, n_px, k->name)))) {
                        r = -ENOMEM;
                        goto out;
                }
        }
out:
        cubin_info_free(info);
        logtrim_ptxas_free(px, n_px);
        return r;
}

static int set_clean_log(const Compiler *c, json_t *res, const char *raw, const char *prefix,
                         const char *source_name)
{
        const char *names[2 + STDSHIM_MAX_NAMES];
        LogtrimConfig cfg = {
                .source_names = names,
                .n_source_names = 2,
                .trusted_prefixes = (const char *const *)c->trusted,
                .n_trusted = c->n_trusted,
                .cap = LIMIT_COMPILE_LOG_BYTES,
        };
        char *log = NULL, *joined = NULL;
        bool truncated = false;
        int r;

        names[0] = source_name;
        names[1] = COMPILE_NAME_MAP;
        /* The shims (public, ours) are shown like toolkit headers. */
        for (size_t i = 0; i < stdshim_count() && i < STDSHIM_MAX_NAMES; i++)
                names[cfg.n_source_names++] = stdshim_names()[i];
        if (prefix && *prefix) {
                joined = xasprintf("%s%s", prefix, raw ? raw : "");
                if (!joined)
                        return -ENOMEM;
                raw = joined;
        }
        r = logtrim_clean(raw, &cfg, &log, &truncated);
        if (r == 0 && (json_object_set_new(res, "log", json_string(log)) ||
                       json_object_set_new(res, "log_truncated", json_boolean(truncated))))
                r = -ENOMEM;
        free(log);
        free(joined);
        return r;
}

/* NVRTC: CUDA C++ to CUBIN. */
static bool has_option(const CompileJob *job, const char *o)
{
        for (size_t i = 0; i < job->n_options; i++)
                if (strcmp(job->options[i], o) == 0)
                        return true;
        return false;
}

static int build_fenced(const CompileJob *job, const char *arch, const char *ptx, size_t len,
                        const char *source_name, json_t *res, CompileOutput *out);

/* Each name expression's lowered (mangled) name into the result's
 * lowered_names. Return: 0 to go on, 1 when the result now says the
 * compile failed (result_fail()), or -ENOMEM. */
static int lowered_names(nvrtcProgram prog, const CompileJob *job, json_t *res)
{
        json_t *lowered = json_object_get(res, "lowered_names");
        int r;

        for (size_t i = 0; i < job->n_name_expressions; i++) {
                const char *lowered_name = NULL;
                nvrtcResult nr = nvrtcGetLoweredName(prog, job->name_expressions[i], &lowered_name);
                if (nr != NVRTC_SUCCESS || !lowered_name) {
                        char *m = xasprintf("error: name expression \"%s\" has no lowered name "
                                            "(it must name a __global__ function or a template "
                                            "instance of one)", job->name_expressions[i]);
                        r = m ? result_fail(res, "compile", m) : -ENOMEM;
                        free(m);
                        return r < 0 ? r : 1;
                }
                if (json_object_set_new(lowered, job->name_expressions[i], json_string(lowered_name)))
                        return -ENOMEM;
        }
        return 0;
}

/* The program's log into *@ret_raw (malloc), or NULL when it has none. Return: 0 or -ENOMEM. */
static int program_log(nvrtcProgram prog, char **ret_raw)
{
        size_t log_size = 0;
        char *raw;

        *ret_raw = NULL;
        if (nvrtcGetProgramLogSize(prog, &log_size) != NVRTC_SUCCESS || log_size == 0)
                return 0;
        raw = malloc(log_size + 1);
        if (!raw)
                return -ENOMEM;
        if (nvrtcGetProgramLog(prog, raw) != NVRTC_SUCCESS)
                raw[0] = '\0';
        raw[log_size] = '\0';
        *ret_raw = raw;
        return 0;
}

/* The compiled CUBIN into *@ret_cubin (a new buffer) and *@ret_len. Return: 0, 1 when it
 * is larger than LIMIT_CUBIN_BYTES (nothing taken), -ENOMEM, or -EIO. */
static int program_cubin(nvrtcProgram prog, uint8_t **ret_cubin, size_t *ret_len)
{
        size_t cubin_size = 0;
        nvrtcResult nr;
        uint8_t *cubin;

        nr = nvrtcGetCUBINSize(prog, &cubin_size);
        if (nr != NVRTC_SUCCESS || cubin_size == 0) {
                log_error("compile: nvrtcGetCUBINSize: %s", nvrtcGetErrorString(nr));
                return -EIO;
        }
        if (cubin_size > LIMIT_CUBIN_BYTES)
                return 1;
        cubin = malloc(cubin_size);
        if (!cubin)
                return -ENOMEM;
        nr = nvrtcGetCUBIN(prog, (char *)cubin);
        if (nr != NVRTC_SUCCESS) {
                log_error("compile: nvrtcGetCUBIN: %s", nvrtcGetErrorString(nr));
                free(cubin);
                return -EIO;
        }
        *ret_cubin = cubin;
        *ret_len = cubin_size;
        return 0;
}

/* The compiled CUBIN into @out, within LIMIT_CUBIN_BYTES.
 * Return: 0 to go on, 1 when the result now says it is too large
 * (result_fail()), -ENOMEM, or -EIO. */
static int take_cubin(nvrtcProgram prog, json_t *res, CompileOutput *out)
{
        int r = program_cubin(prog, &out->cubin, &out->cubin_len);

        if (r == 1) {
                r = result_fail(res, "too_large", "error: the compiled CUBIN is larger than the limit");
                return r < 0 ? r : 1;
        }
        return r;
}

/*
 * @flags: COMPILE_SOURCE_* of compile_check_source(). A source that
 * includes libcu++ gets -D__KEVALD_LIBCUDACXX=1: the prelude then leaves
 * INFINITY and NAN to <cuda/std/cmath>, which defines them without a guard
 * and would warn of a redefinition; =2 when it also names them: the
 * prelude then includes <cuda/std/cmath> itself. A source that defines a
 * macro of the prelude's (INFINITY, M_PI, ...) as NVRTC code has had to is
 * compiled with --diag-suppress=47: NVRTC would warn of an incompatible
 * redefinition "declared at line 20 of kevald_math.h", a file the source
 * never named.
 *
 * The NVRTC options of @job (its own, -O levels as ptxas options, then the
 * worker's), in @opts (room for job->n_options + 10 + the include folders,
 * the last one left free for -minimal); @oflags and @arch_opt hold what was
 * allocated (free them after). Return: how many, or -ENOMEM.
 */
static int nvrtc_options(const Compiler *c, const CompileJob *job, const char *arch, unsigned flags,
                         const char **opts, char **oflags, char **arch_opt)
{
        size_t n_opts = 0;

        *arch_opt = xasprintf("-arch=%s", arch);
        if (!*arch_opt)
                return -ENOMEM;
        for (size_t i = 0; i < job->n_options; i++) {
                const char *o = job->options[i];
                if (o[0] == '-' && o[1] == 'O' && o[2] >= '0' && o[2] <= '3' && o[3] == '\0') {
                        oflags[i] = xasprintf("--ptxas-options=%s", o);
                        if (!oflags[i])
                                return -ENOMEM;
                        o = oflags[i];
                }
                opts[n_opts++] = o;
        }
        opts[n_opts++] = *arch_opt;
        for (size_t i = 0; i < c->n_include_dirs; i++)
                opts[n_opts++] = c->include_opts[i];
        opts[n_opts++] = "--ptxas-options=-v";
        opts[n_opts++] = "-include";
        opts[n_opts++] = STDSHIM_PRELUDE;
        if (flags & COMPILE_SOURCE_REDEFINES_PRELUDE)
                opts[n_opts++] = "--diag-suppress=47";
        if (flags & COMPILE_SOURCE_LIBCUDACXX)
                opts[n_opts++] = flags & COMPILE_SOURCE_INF_NAN ? "-D" STDSHIM_LIBCUDACXX "=2" :
                                                                  "-D" STDSHIM_LIBCUDACXX "=1";
        if (!has_option(job, "-lineinfo") && !has_option(job, "--generate-line-info"))
                opts[n_opts++] = "-lineinfo";
        return (int)n_opts;
}

static int run_nvrtc(Compiler *c, const CompileJob *job, const char *arch, const char *src,
                     unsigned flags, json_t *res, CompileOutput *out)
{
        nvrtcProgram prog = NULL;
        const char **opts = NULL;
        char *arch_opt = NULL, *raw = NULL, *ptx = NULL, *oflags[LIMIT_OPTIONS_MAX] = { 0 };
        size_t n_opts = 0;
        nvrtcResult nr;
        int r = 0;

        opts = calloc(job->n_options + 10 + COMPILE_INCLUDE_DIRS, sizeof(char *));
        if (!opts) {
                r = -ENOMEM;
                goto out;
        }
        r = nvrtc_options(c, job, arch, flags, opts, oflags, &arch_opt);
        if (r < 0)
                goto out;
        n_opts = (size_t)r;
        r = 0;
        /*
         * First with -minimal, which leaves out of the implicit headers what a
         * kernel here cannot use or rarely does (textures and surfaces, device
         * runtime calls, launches from the device, the runtime API's types):
         * 10-13 % of a small kernel's compile time (NVRTC 13.0, measured in
         * session 17; an earlier note said a third). What needs them fails
         * to compile that way and is compiled again without, so the log and the
         * CUBIN are always those of a compile that succeeded or of the full one.
         */
        opts[n_opts] = "-minimal";
        for (int attempt = 0; attempt < 2; attempt++) {
                nr = nvrtcCreateProgram(&prog, src, COMPILE_SOURCE_NAME, (int)stdshim_count(),
                                        stdshim_texts(), stdshim_names());
                if (nr != NVRTC_SUCCESS) {
                        r = nr == NVRTC_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
                        log_error("compile: nvrtcCreateProgram failed: %s", nvrtcGetErrorString(nr));
                        goto out;
                }
                for (size_t i = 0; i < job->n_name_expressions; i++) {
                        nr = nvrtcAddNameExpression(prog, job->name_expressions[i]);
                        if (nr != NVRTC_SUCCESS) {
                                char *m = xasprintf("error: name expression \"%s\" was not accepted: %s",
                                                    job->name_expressions[i], nvrtcGetErrorString(nr));
                                r = m ? result_fail(res, "compile", m) : -ENOMEM;
                                free(m);
                                goto out;
                        }
                }
                nr = nvrtcCompileProgram(prog, (int)n_opts + (attempt == 0), opts);
                if (attempt > 0 || nr == NVRTC_SUCCESS ||
                    (nr != NVRTC_ERROR_COMPILATION && nr != NVRTC_ERROR_INVALID_OPTION))
                        break;
                nvrtcDestroyProgram(&prog);
                prog = NULL;
        }
        r = program_log(prog, &raw);
        if (r == 0)
                r = set_clean_log(c, res, raw, NULL, COMPILE_SOURCE_NAME);
        if (r != 0)
                goto out;
        if (nr != NVRTC_SUCCESS) {
                json_object_set_new(res, "error", json_string(nr == NVRTC_ERROR_INVALID_OPTION ?
                                                              "rejected_option" : "compile"));
                if (nr != NVRTC_ERROR_COMPILATION && nr != NVRTC_ERROR_INVALID_OPTION)
                        log_warn("compile: nvrtcCompileProgram: %s", nvrtcGetErrorString(nr));
                goto out;
        }
        if ((r = lowered_names(prog, job, res)) != 0 || (r = take_cubin(prog, res, out)) != 0) {
                if (r > 0)
                        r = 0; /* a compile error, which the result says */
                goto out;
        }
        r = fill_kernels(res, out->cubin, out->cubin_len, raw);
        if (r == CUBIN_E_MALFORMED) {
                log_error("compile: NVRTC produced a CUBIN that cubin_parse() refuses");
                r = -EIO;
        }
        if (r == 0) {
                size_t ptx_size = 0;
                json_object_set_new(res, "ok", json_true());
                if (job->no_fence)
                        ;
                else if (nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 1 &&
                    (ptx = malloc(ptx_size)) && nvrtcGetPTX(prog, ptx) == NVRTC_SUCCESS)
                        r = build_fenced(job, arch, ptx, strnlen(ptx, ptx_size), COMPILE_SOURCE_NAME, res, out);
                else if (!ptx && ptx_size > 1)
                        r = -ENOMEM;
                else
                        json_object_set_new(res, "fence", json_pack("{s:s}", "error", "NVRTC gave no PTX"));
        }
out:
        free(ptx);
        for (size_t i = 0; i < LIMIT_OPTIONS_MAX; i++)
                free(oflags[i]);
        free(opts);
        free(arch_opt);
        out->raw_log = raw;
        if (prog)
                nvrtcDestroyProgram(&prog);
        return r;
}

/* Free @n strings of @v and @v; accepts NULL. */
static void strv_free(char **v, size_t n)
{
        if (v)
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
        free(v);
}

/* Client options that mean something to nvJitLink, in its spelling. */
static int ptx_options(const CompileJob *job, char ***ret_opts, size_t *ret_n, char **ret_notes)
{
        char **v = calloc(4 * job->n_options + 1, sizeof(char *));
        char *notes = NULL;
        size_t n = 0;
        int r = 0;

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < job->n_options; i++) {
                const char *o = job->options[i], *p = o + (o[1] == '-' ? 2 : 1);
                if (strcmp(p, "use_fast_math") == 0) {
                        v[n++] = strdup("-ftz=true");
                        v[n++] = strdup("-prec-div=false");
                        v[n++] = strdup("-prec-sqrt=false");
                        v[n++] = strdup("-fma=true");
                } else if (strncmp(p, "ftz=", 4) == 0 || strncmp(p, "prec-div=", 9) == 0 ||
                           strncmp(p, "prec-sqrt=", 10) == 0) {
                        v[n++] = xasprintf("-%s", p);
                } else if (strncmp(p, "fmad=", 5) == 0) {
                        v[n++] = xasprintf("-fma=%s", p + 5);
                } else if (strncmp(p, "maxrregcount=", 13) == 0) {
                        v[n++] = xasprintf("-maxrregcount=%s", p + 13);
                } else if (strcmp(p, "lineinfo") == 0 || strcmp(p, "generate-line-info") == 0) {
                        v[n++] = strdup("-lineinfo");
                } else if (o[1] == 'O' && o[2] && !o[3]) {
                        v[n++] = xasprintf("-Xptxas=%s", o);
                } else if (strncmp(o, "--ptxas-options=", 16) == 0) {
                        v[n++] = xasprintf("-Xptxas=%s", o + 16);
                } else if (strncmp(o, "-Xptxas=", 8) == 0) {
                        v[n++] = strdup(o);
                } else {
                        char *m = xasprintf("%snote: option '%s' applies to CUDA C++ only and was "
                                            "ignored for PTX\n", notes ? notes : "", o);
                        free(notes);
                        notes = m;
                        if (!m) {
                                r = -ENOMEM;
                                goto out;
                        }
                        continue;
                }
                if (!v[n - 1]) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        *ret_opts = v;
        *ret_n = n;
        *ret_notes = notes;
        v = NULL;
        notes = NULL;
out:
        if (v)
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
        free(v);
        free(notes);
        return r;
}

static char *jitlink_log(nvJitLinkHandle h, bool error_log)
{
        size_t size = 0;
        char *s;

        if ((error_log ? nvJitLinkGetErrorLogSize(h, &size) : nvJitLinkGetInfoLogSize(h, &size)) !=
            NVJITLINK_SUCCESS)
                size = 0;
        s = malloc(size + 1);
        if (!s)
                return NULL;
        s[0] = '\0';
        if (size > 0 && (error_log ? nvJitLinkGetErrorLog(h, s) : nvJitLinkGetInfoLog(h, s)) !=
                        NVJITLINK_SUCCESS)
                s[0] = '\0';
        s[size] = '\0';
        return s;
}

/* nvJitLink: PTX to CUBIN. */
static int run_jitlink(Compiler *c, const CompileJob *job, const char *arch, const char *src,
                       json_t *res, CompileOutput *out)
{
        nvJitLinkHandle h = NULL;
        char **copts = NULL, *notes = NULL, *arch_opt = NULL, *err = NULL, *info = NULL, *raw = NULL;
        const char **opts = NULL;
        size_t n_copts = 0, n_opts = 0, cubin_size = 0;
        nvJitLinkResult jr;
        const char *kind = NULL;
        int r;

        r = ptx_options(job, &copts, &n_copts, &notes);
        if (r != 0)
                goto out;
        opts = calloc(n_copts + 2, sizeof(char *));
        arch_opt = xasprintf("-arch=%s", arch);
        if (!opts || !arch_opt) {
                r = -ENOMEM;
                goto out;
        }
        opts[n_opts++] = arch_opt;
        opts[n_opts++] = "-Xptxas=-v";
        for (size_t i = 0; i < n_copts; i++)
                opts[n_opts++] = copts[i];
        jr = nvJitLinkCreate(&h, (uint32_t)n_opts, opts);
        if (jr != NVJITLINK_SUCCESS) {
                h = NULL;
                if (jr == NVJITLINK_ERROR_UNRECOGNIZED_OPTION || jr == NVJITLINK_ERROR_MISSING_ARCH) {
                        r = result_fail(res, "rejected_option",
                                        "error: nvJitLink refused the options for this target");
                } else {
                        log_error("compile: nvJitLinkCreate failed (%d)", (int)jr);
                        r = -EIO;
                }
                goto out;
        }
        jr = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, src, job->source_len, COMPILE_PTX_NAME);
        if (jr == NVJITLINK_SUCCESS)
                jr = nvJitLinkComplete(h);
        if (jr != NVJITLINK_SUCCESS)
                kind = jr == NVJITLINK_ERROR_PTX_COMPILE ? "compile" : "link";
        err = jitlink_log(h, true);
        info = jitlink_log(h, false);
        if (!err || !info) {
                r = -ENOMEM;
                goto out;
        }
        raw = xasprintf("%s%s%s", err, *err && *info ? "\n" : "", info);
        if (!raw) {
                r = -ENOMEM;
                goto out;
        }
        r = set_clean_log(c, res, raw, notes, COMPILE_PTX_NAME);
        if (r != 0)
                goto out;
        if (kind) {
                json_object_set_new(res, "error", json_string(kind));
                if (!*err && !*info) {
                        char *m = xasprintf("%serror: nvJitLink failed (code %d) without a log\n",
                                            notes ? notes : "", (int)jr);
                        r = m ? result_fail(res, kind, m) : -ENOMEM;
                        free(m);
                }
                goto out;
        }
        jr = nvJitLinkGetLinkedCubinSize(h, &cubin_size);
        if (jr != NVJITLINK_SUCCESS || cubin_size == 0) {
                log_error("compile: nvJitLinkGetLinkedCubinSize failed (%d)", (int)jr);
                r = -EIO;
                goto out;
        }
        if (cubin_size > LIMIT_CUBIN_BYTES) {
                r = result_fail(res, "too_large", "error: the linked CUBIN is larger than the limit");
                goto out;
        }
        out->cubin = malloc(cubin_size);
        if (!out->cubin) {
                r = -ENOMEM;
                goto out;
        }
        jr = nvJitLinkGetLinkedCubin(h, out->cubin);
        if (jr != NVJITLINK_SUCCESS) {
                log_error("compile: nvJitLinkGetLinkedCubin failed (%d)", (int)jr);
                r = -EIO;
                goto out;
        }
        out->cubin_len = cubin_size;
        r = fill_kernels(res, out->cubin, out->cubin_len, raw);
        if (r == CUBIN_E_MALFORMED) {
                log_error("compile: nvJitLink produced a CUBIN that cubin_parse() refuses");
                r = -EIO;
        }
        if (r == 0) {
                json_object_set_new(res, "ok", json_true());
                if (!job->no_fence)
                        r = build_fenced(job, arch, src, job->source_len, NULL, res, out);
        }
out:
        if (h)
                nvJitLinkDestroy(&h);
        strv_free(copts, n_copts);
        free(opts);
        free(notes);
        free(arch_opt);
        free(err);
        free(info);
        out->raw_log = raw;
        return r;
}

/* The first line of @log, for a short reason. */
static void first_line(const char *log, char *buf, size_t len)
{
        size_t n = strcspn(log, "\n");

        snprintf(buf, len, "%.*s", (int)(n < 200 ? n : 200), log);
}

/*
 * The fenced build of @ptx (NVRTC's output, or a PTX submission) into
 * out->fenced, with the same ptxas options as the plain build; what it
 * checks, or why there is none, into @res's "fence". A refusal of the pass
 * or of nvJitLink is not the submission's failure.
 * Return: 0 or -ENOMEM.
 */
static int build_fenced(const CompileJob *job, const char *arch, const char *ptx, size_t len,
                        const char *source_name, json_t *res, CompileOutput *out)
{
        double t0 = now_ms();
        FenceReport rep = { 0 };
        nvJitLinkHandle h = NULL;
        nvJitLinkResult jr;
        char *fptx = NULL, **copts = NULL, *notes = NULL, *arch_opt = NULL, why[256] = "";
        const char **opts = NULL;
        size_t flen = 0, n_copts = 0, n_opts = 0, size = 0;
        json_t *fence;
        int r;

        r = fence_ptx(ptx, len, source_name, &fptx, &flen, &rep);
        if (r < 0)
                goto out;
        if (r == FENCE_E_UNSUPPORTED) {
                snprintf(why, sizeof(why), "the fence pass cannot check this module: %s", rep.note);
                r = 0;
                goto done;
        }
        if ((r = ptx_options(job, &copts, &n_copts, &notes)))
                goto out;
        opts = calloc(n_copts + 1, sizeof(char *));
        arch_opt = xasprintf("-arch=%s", arch);
        if (!opts || !arch_opt) {
                r = -ENOMEM;
                goto out;
        }
        opts[n_opts++] = arch_opt;
        for (size_t i = 0; i < n_copts; i++)
                opts[n_opts++] = copts[i];
        jr = nvJitLinkCreate(&h, (uint32_t)n_opts, opts);
        if (jr != NVJITLINK_SUCCESS) {
                h = NULL;
                snprintf(why, sizeof(why), "nvJitLink refused the options (%d)", (int)jr);
                goto done;
        }
        jr = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, fptx, flen, "kernel.fenced.ptx");
        if (jr == NVJITLINK_SUCCESS)
                jr = nvJitLinkComplete(h);
        if (jr != NVJITLINK_SUCCESS) {
                char *log = jitlink_log(h, true), line[220];
                if (!log) {
                        r = -ENOMEM;
                        goto out;
                }
                first_line(log, line, sizeof(line));
                snprintf(why, sizeof(why), "the fenced PTX did not link: %s", line);
                log_warn("compile: the fenced PTX did not link (%d): %s", (int)jr, log);
                free(log);
                goto done;
        }
        if (nvJitLinkGetLinkedCubinSize(h, &size) != NVJITLINK_SUCCESS || size == 0 || size > LIMIT_CUBIN_BYTES) {
                snprintf(why, sizeof(why), "the fenced CUBIN is empty or larger than the limit");
                goto done;
        }
        if (!(out->fenced = malloc(size))) {
                r = -ENOMEM;
                goto out;
        }
        if (nvJitLinkGetLinkedCubin(h, out->fenced) != NVJITLINK_SUCCESS) {
                free(out->fenced);
                out->fenced = NULL;
                snprintf(why, sizeof(why), "nvJitLink gave no fenced CUBIN");
                goto done;
        }
        out->fenced_len = size;
done:
        fence = json_pack("{s:I, s:I, s:f}", "sites", (json_int_t)rep.sites, "unchecked", (json_int_t)rep.unchecked,
                          "ms", (double)(long)((now_ms() - t0) * 100) / 100.0);
        if (!fence) {
                r = -ENOMEM;
                goto out;
        }
        if (why[0])
                json_object_set_new(fence, "error", json_string(why));
        else if (rep.unchecked)
                json_object_set_new(fence, "note", json_string(rep.note));
        if (json_object_set_new(res, "fence", fence))
                r = -ENOMEM;
out:
        if (h)
                nvJitLinkDestroy(&h);
        strv_free(copts, n_copts);
        free(opts);
        free(notes);
        free(arch_opt);
        free(fptx);
        return r;
}

/**
 * compile_run() - compile one job
 * @c:       the compiler; borrowed
 * @job:     the job; borrowed
 * @ret_out: on success, the RESULT object (ok true or false; see
 *           docs/internals.md) and, when ok, the CUBIN; the caller frees it
 *           with compile_output_clear()
 *
 * A compile error, a refused option or source, a link error: all are
 * successful runs with ok false in the result.
 *
 * Return: 0, -ENOMEM, or -EIO when NVRTC or nvJitLink failed in a way that
 * is not the submission's fault.
 */
/*
 * Everything compile_run() checks before a compiler runs, into @out; with
 * @facts, the same scan of a CUDA source also gathers what a merged compile
 * needs of it (compile_scan_merge()).
 * Return: 0 when the source is to be compiled (*ret_src, a NUL-terminated
 * copy, and *ret_flags set), 1 when out->result is final (refused), or -ENOMEM.
 */
static int compile_prepare(Compiler *c, const CompileJob *job, const char *arch, CompileOutput *out,
                           unsigned *ret_flags, char **ret_src, MergeFacts *facts)
{
        bool ptx = job->language && strcmp(job->language, "ptx") == 0;
        char msg[COMPILE_MSG_BYTES], *src;
        size_t bad;
        int r;

        *ret_flags = 0;
        out->result = result_new(c, arch_valid(arch) ? arch : "");
        if (!out->result)
                return -ENOMEM;
        if (job->language && strcmp(job->language, "cuda") != 0 && !ptx) {
                r = result_fail(out->result, "rejected_option", "error: language must be \"cuda\" or \"ptx\"");
                return r < 0 ? r : 1;
        }
        if (!arch_valid(arch)) {
                r = result_fail(out->result, "rejected_option",
                                "error: the target architecture is not of the form sm_NN[a|f]");
                return r < 0 ? r : 1;
        }
        if (job->source_len > LIMIT_SOURCE_BYTES) {
                snprintf(msg, sizeof(msg), "error: the source is %zu bytes; the limit is %u bytes",
                         job->source_len, (unsigned)LIMIT_SOURCE_BYTES);
                r = result_fail(out->result, "too_large", msg);
                return r < 0 ? r : 1;
        }
        if (job->n_options > LIMIT_OPTIONS_MAX) {
                snprintf(msg, sizeof(msg), "error: %zu options; the limit is %d", job->n_options,
                         LIMIT_OPTIONS_MAX);
                r = result_fail(out->result, "rejected_option", msg);
                return r < 0 ? r : 1;
        }
        for (size_t i = 0; i < job->n_options; i++) {
                char why[256];
                if (options_check(job->options[i], why, sizeof(why)) != 0) {
                        snprintf(msg, sizeof(msg), "error: %s", why);
                        r = result_fail(out->result, "rejected_option", msg);
                        return r < 0 ? r : 1;
                }
        }
        if (job->n_name_expressions > LIMIT_NAME_EXPRESSIONS_MAX) {
                snprintf(msg, sizeof(msg), "error: %zu name expressions; the limit is %d",
                         job->n_name_expressions, LIMIT_NAME_EXPRESSIONS_MAX);
                r = result_fail(out->result, "too_large", msg);
                return r < 0 ? r : 1;
        }
        for (size_t i = 0; i < job->n_name_expressions; i++)
                if (!name_expression_valid(job->name_expressions[i])) {
                        r = result_fail(out->result, "compile",
                                        "error: a name expression is empty, too long, or has "
                                        "characters other than letters, digits, spaces and "
                                        "_ : < > , ( ) * & . + - [ ]");
                        return r < 0 ? r : 1;
                }
        if (job->source_len > 0 && memchr(job->source, '\0', job->source_len)) {
                snprintf(msg, sizeof(msg), "error: the source contains a NUL byte (offset %zu)",
                         (size_t)((const char *)memchr(job->source, '\0', job->source_len) -
                                  job->source));
                r = result_fail(out->result, "not_utf8", msg);
                return r < 0 ? r : 1;
        }
        bad = logtrim_utf8_prefix((const unsigned char *)job->source, job->source_len);
        if (bad != job->source_len) {
                size_t line = 1;
                for (size_t i = 0; i < bad; i++)
                        line += job->source[i] == '\n';
                snprintf(msg, sizeof(msg), "error: the source is not valid UTF-8 (line %zu, byte "
                         "offset %zu)", line, bad);
                r = result_fail(out->result, "not_utf8", msg);
                return r < 0 ? r : 1;
        }
        if (!ptx) {
                CompileScanDirs dirs = scan_dirs(c);
                r = compile_scan_merge(&dirs, job->source, job->source_len, ret_flags, msg, sizeof(msg), facts);
                if (r == COMPILE_E_REJECTED) {
                        r = result_fail(out->result, "compile", msg);
                        return r < 0 ? r : 1;
                }
                if (r != 0)
                        return r;
        }
        src = malloc(job->source_len + 1);
        if (!src)
                return -ENOMEM;
        memcpy(src, job->source, job->source_len);
        src[job->source_len] = '\0';
        *ret_src = src;
        return 0;
}

/* The end of compile_run() for @out after @r: compile_ms, no CUBIN unless ok. */
static int compile_finish(CompileOutput *out, int r, double t0, CompileOutput *ret_out)
{
        if (r == 0 && json_object_set_new(out->result, "compile_ms",
                                          json_real((double)(long)((now_ms() - t0) * 100) / 100.0)))
                r = -ENOMEM;
        if (r == 0 && !json_is_true(json_object_get(out->result, "ok"))) {
                free(out->cubin);
                free(out->fenced);
                out->cubin = out->fenced = NULL;
                out->cubin_len = out->fenced_len = 0;
        }
        if (r != 0) {
                compile_output_clear(out);
                return r;
        }
        *ret_out = *out;
        return 0;
}

int compile_run(Compiler *c, const CompileJob *job, CompileOutput *ret_out)
{
        CompileOutput out = { 0 };
        const char *arch = job->arch && *job->arch ? job->arch : COMPILE_ARCH_DEFAULT;
        bool ptx = job->language && strcmp(job->language, "ptx") == 0;
        double t0 = now_ms();
        unsigned flags = 0;
        char *src = NULL;
        int r;

        r = compile_prepare(c, job, arch, &out, &flags, &src, NULL);
        if (r == 0)
                r = ptx ? run_jitlink(c, job, arch, src, out.result, &out) :
                          run_nvrtc(c, job, arch, src, flags, out.result, &out);
        else if (r == 1)
                r = 0;
        free(src);
        return compile_finish(&out, r, t0, ret_out);
}

/* ---- merged compiles (worker/compile/group.h) ------------------------------- */

/* One NVRTC compile of @src as kernel.cu with @opts: its result, raw log (NULL when empty)
 * and, when it compiled and @ret_cubin is given, the CUBIN (one larger than the limit
 * counts as a failed compile: each member alone says why). Return: 0, -ENOMEM, or -EIO. */
static int nvrtc_plain(const char *src, const char **opts, size_t n_opts, nvrtcResult *ret_nr, char **ret_log,
                       uint8_t **ret_cubin, size_t *ret_len)
{
        nvrtcProgram prog = NULL;
        nvrtcResult nr;
        int r;

        *ret_log = NULL;
        nr = nvrtcCreateProgram(&prog, src, COMPILE_SOURCE_NAME, (int)stdshim_count(), stdshim_texts(),
                                stdshim_names());
        if (nr != NVRTC_SUCCESS)
                return nr == NVRTC_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
        *ret_nr = nvrtcCompileProgram(prog, (int)n_opts, opts);
        r = program_log(prog, ret_log);
        if (r == 0 && *ret_nr == NVRTC_SUCCESS && ret_cubin) {
                r = program_cubin(prog, ret_cubin, ret_len);
                if (r == 1) {
                        *ret_nr = NVRTC_ERROR_COMPILATION;
                        r = 0;
                }
        }
        nvrtcDestroyProgram(&prog);
        return r;
}

_Static_assert(GROUP_MAX == COMPILE_GROUP_MAX, "one bound on a group");

enum { MEMBER_ALONE, MEMBER_MERGE, MEMBER_MERGED };

/* Of the members in MEMBER_MERGE (their facts gathered), those with the most common list
 * of headers stay, if two or more, in *@ret_includes; the others go alone. */
static void group_candidates(size_t n, int *state, const MergeFacts *facts, const char **ret_includes)
{
        size_t best = 0;

        *ret_includes = NULL;
        for (size_t i = 0; i < n; i++) {
                size_t count = 0;
                if (state[i] != MEMBER_MERGE)
                        continue;
                for (size_t k = 0; k < n; k++)
                        count += state[k] == MEMBER_MERGE && strcmp(facts[k].includes, facts[i].includes) == 0;
                if (count > best) {
                        best = count;
                        *ret_includes = facts[i].includes;
                }
        }
        for (size_t i = 0; i < n; i++)
                if (state[i] == MEMBER_MERGE && (best < 2 || strcmp(facts[i].includes, *ret_includes) != 0))
                        state[i] = MEMBER_ALONE;
}

/* The members in @state MEMBER_MERGE, in order, as GroupMembers; returns how many. */
static size_t group_members(const CompileJob *jobs, char *const *srcs, size_t n, const int *state,
                            const MergeFacts *facts, uint64_t tag, GroupMember *m, size_t *idx)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                if (state[i] == MEMBER_MERGE) {
                        m[k].src = srcs[i];
                        m[k].len = jobs[i].source_len;
                        m[k].facts = &facts[i];
                        group_member_ns(&m[k], tag, i);
                        idx[k++] = i;
                }
        return k;
}

/* Ask the global scope about every member's names (group_probe_source()). */
static int group_probe(const char *includes, const char **opts, size_t n_opts, GroupMember *m, size_t k,
                       const size_t *idx, int *state)
{
        GroupProbe *probes = NULL;
        size_t n_probes = 0;
        bool present[GROUP_MAX] = { false };
        nvrtcResult nr;
        char *src = group_probe_source(includes, m, k, &probes, &n_probes), *log = NULL;
        int r;


        if (!src) {
                for (size_t j = 0; j < k; j++)
                        state[idx[j]] = MEMBER_ALONE; /* too many names to ask about (or no memory) */
                return 0;
        }
        opts[n_opts] = "-fdevice-syntax-only";
        r = nvrtc_plain(src, opts, n_opts + 1, &nr, &log, NULL, NULL);

        if (r == 0)
                r = group_probe_read(log, probes, n_probes, present, k);

        for (size_t j = 0; j < k && r == 0; j++)
                if (present[j])
                        state[idx[j]] = MEMBER_ALONE;
        free(src);
        free(log);
        free(probes);
        return r;
}

/* A merged member's output: its log, its kernels out of the merged CUBIN, a copy of that CUBIN.
 * Return: 0; 1 when the member must be compiled alone after all; -ENOMEM. */
static int group_member_output(const Compiler *c, const GroupMember *m, const char *arch, const char *member_raw,
                               const CubinInfo *info, const PtxasKernel *px, size_t n_px, const uint8_t *cubin,
                               size_t len, double share_ms, CompileOutput *out)
{
        char prefix[GROUP_NS_BYTES + 2], mangled[GROUP_NS_BYTES + 4], *raw = NULL;
        size_t plen;
        json_t *arr;
        int r;

        snprintf(prefix, sizeof(prefix), "%s_", m->ns);
        snprintf(mangled, sizeof(mangled), "%zu%s", strlen(m->ns), m->ns); /* as a mangled name holds it */
        plen = strlen(prefix);
        out->result = result_new(c, arch);
        if (!out->result)
                return -ENOMEM;
        arr = json_object_get(out->result, "kernels");
        for (size_t i = 0; i < info->n_kernels; i++) {
                const CubinKernel *k = &info->kernels[i];
                CubinKernel kk;
                if (strncmp(k->name, prefix, plen) != 0) {
                        if (strstr(k->name, mangled))
                                return 1; /* a C++ kernel: its name alone is mangled without the namespace */
                        continue;
                }
                kk = *k;
                kk.name = k->name + plen;
                if (json_array_append_new(arr, kernel_json(&kk, logtrim_find_ptxas(px, n_px, k->name))))
                        return -ENOMEM;
        }
        raw = group_unname(member_raw, m);
        if (!raw)
                return -ENOMEM;
        r = set_clean_log(c, out->result, raw, NULL, COMPILE_SOURCE_NAME);
        free(raw);
        if (r != 0)
                return r;
        if (json_object_set_new(out->result, "ok", json_true()) ||
            json_object_set_new(out->result, "group_prefix", json_string(prefix)) ||
            json_object_set_new(out->result, "compile_ms", json_real((double)(long)(share_ms * 100) / 100.0)))
                return -ENOMEM;
        out->cubin = malloc(len);
        if (!out->cubin)
                return -ENOMEM;
        memcpy(out->cubin, cubin, len);
        out->cubin_len = len;
        return 0;
}

/*
 * One merged compile of the members in MEMBER_MERGE. Success: each gets its
 * output (MEMBER_MERGED) or goes alone. Failure: the members with errors of
 * their own go alone and the others stay in MEMBER_MERGE for another try;
 * an error in no member's file sends every one alone.
 */
static int group_compile(Compiler *c, const CompileJob *jobs, char *const *srcs, size_t n, const char *arch,
                         const char *includes, const char **opts, size_t n_opts, uint64_t tag, int *state,
                         const MergeFacts *facts, CompileOutput *outs)
{
        GroupMember m[GROUP_MAX];
        size_t idx[GROUP_MAX], k = group_members(jobs, srcs, n, state, facts, tag, m, idx);
        char *member_raw[GROUP_MAX] = { 0 }, *src, *log = NULL;
        bool has_error[GROUP_MAX] = { false };
        uint8_t *cubin = NULL;
        size_t len = 0, n_px = 0, flagged = 0;
        CubinInfo *info = NULL;
        PtxasKernel *px = NULL;
        double t0 = now_ms();
        nvrtcResult nr = NVRTC_ERROR_COMPILATION;
        int r;

        src = group_merged_source(includes, m, k, tag);
        if (!src)
                return -ENOMEM;
        opts[n_opts] = "-minimal";
        r = nvrtc_plain(src, opts, n_opts + 1, &nr, &log, &cubin, &len);
        free(src);
        if (r != 0)
                goto out;
        r = group_split_log(log, m, k, member_raw, has_error);
        if (r == -EAGAIN) {
                r = 0;
                goto alone;
        }
        if (r != 0)
                goto out;
        if (nr != NVRTC_SUCCESS) {
                for (size_t j = 0; j < k; j++)
                        if (has_error[j]) {
                                state[idx[j]] = MEMBER_ALONE;
                                flagged++;
                        }
                if (flagged == 0)
                        goto alone;
                goto out;
        }
        r = cubin_parse(cubin, len, &info);
        if (r == 0)
                r = logtrim_parse_ptxas(log, &px, &n_px);
        if (r == CUBIN_E_MALFORMED) {
                r = 0;
                goto alone;
        }
        if (r != 0)
                goto out;
        for (size_t i = 0; i < info->n_kernels; i++) {
                bool owned = false;
                for (size_t j = 0; j < k && !owned; j++) {
                        char pre[GROUP_NS_BYTES + 2], mang[GROUP_NS_BYTES + 4];
                        snprintf(pre, sizeof(pre), "%s_", m[j].ns);
                        snprintf(mang, sizeof(mang), "%zu%s", strlen(m[j].ns), m[j].ns);
                        owned = strncmp(info->kernels[i].name, pre, strlen(pre)) == 0 ||
                                strstr(info->kernels[i].name, mang) != NULL;
                }
                if (!owned)
                        goto alone; /* a kernel no member's names account for */
        }
        for (size_t j = 0; j < k; j++) {
                r = group_member_output(c, &m[j], arch, member_raw[j], info, px, n_px, cubin, len,
                                        (now_ms() - t0) / (double)k, &outs[idx[j]]);
                if (r < 0)
                        goto out;
                if (r == 1) {
                        compile_output_clear(&outs[idx[j]]);
                        state[idx[j]] = MEMBER_ALONE;
                        r = 0;
                } else {
                        state[idx[j]] = MEMBER_MERGED;
                }
        }
        goto out;
alone:
        for (size_t j = 0; j < k; j++)
                state[idx[j]] = MEMBER_ALONE;
out:
        for (size_t j = 0; j < k; j++)
                free(member_raw[j]);
        cubin_info_free(info);
        logtrim_ptxas_free(px, n_px);
        free(cubin);
        free(log);
        return r;
}

/**
 * compile_run_group() - compile_run() for each of @n CUDA jobs that share
 * arch and options, merged into one NVRTC program where each is sure to get
 * the result it would get alone (worker/compile/group.h), alone otherwise
 * @tag:        a number of this worker's own, unknown to sources, in the merged names
 * @outs:       n outputs, as compile_run()'s; a merged member's result says
 *              "group_prefix": its kernels are those of the CUBIN (the merged
 *              program's, copied) whose names begin with it, and its
 *              compile_ms is its share of the merged compile
 * @ret_merged: how many were merged
 *
 * Up to two merged compiles: after the first fails, the members with errors
 * of their own are compiled alone and the others merged once more. A job
 * that does not share the first one's arch or options, or has name
 * expressions or a fenced build, is compiled alone.
 *
 * Return: 0, or -ENOMEM / -EIO as compile_run() (every output cleared).
 */
int compile_run_group(Compiler *c, const CompileJob *jobs, size_t n, uint64_t tag, CompileOutput *outs,
                      size_t *ret_merged)
{
        int state[GROUP_MAX];
        MergeFacts facts[GROUP_MAX];
        char *srcs[GROUP_MAX] = { 0 }, *arch_opt = NULL, *oflags[LIMIT_OPTIONS_MAX] = { 0 };
        const char *arch = jobs[0].arch && *jobs[0].arch ? jobs[0].arch : COMPILE_ARCH_DEFAULT, *includes = NULL;
        const char **opts = NULL;
        size_t merged = 0, waiting;
        int r = 0, n_opts = 0;

        if (n > GROUP_MAX)
                return -EINVAL;
        memset(facts, 0, sizeof(facts));
        memset(outs, 0, n * sizeof(*outs));
        for (size_t i = 0; i < n; i++) {
                bool same = jobs[i].n_options == jobs[0].n_options &&
                            strcmp(jobs[i].arch && *jobs[i].arch ? jobs[i].arch : COMPILE_ARCH_DEFAULT, arch) == 0;
                for (size_t o = 0; same && o < jobs[i].n_options; o++)
                        same = strcmp(jobs[i].options[o], jobs[0].options[o]) == 0;
                state[i] = same && (!jobs[i].language || strcmp(jobs[i].language, "cuda") == 0) ? MEMBER_MERGE
                                                                                                 : MEMBER_ALONE;
                if (state[i] == MEMBER_MERGE) {
                        CompileOutput pre = { 0 };
                        unsigned flags;
                        r = compile_prepare(c, &jobs[i], arch, &pre, &flags, &srcs[i], &facts[i]);
                        compile_output_clear(&pre);
                        if (r < 0)
                                goto out;
                        /* refused (compile_run() says why), or what merging cannot follow */
                        if (r == 1 || !facts[i].mergeable || jobs[i].n_name_expressions || !jobs[i].no_fence ||
                            (flags & (COMPILE_SOURCE_LIBCUDACXX | COMPILE_SOURCE_REDEFINES_PRELUDE)))
                                state[i] = MEMBER_ALONE;
                        r = 0;
                }
        }
        group_candidates(n, state, facts, &includes);

        waiting = 0;
        for (size_t i = 0; i < n; i++)
                waiting += state[i] == MEMBER_MERGE;
        if (waiting >= 2) {
                opts = calloc(jobs[0].n_options + 11 + COMPILE_INCLUDE_DIRS, sizeof(char *));
                if (!opts) {
                        r = -ENOMEM;
                        goto out;
                }
                n_opts = nvrtc_options(c, &jobs[0], arch, 0, opts, oflags, &arch_opt);
                if (n_opts < 0) {
                        r = n_opts;
                        goto out;
                }
                GroupMember m[GROUP_MAX];
                size_t idx[GROUP_MAX], k = group_members(jobs, srcs, n, state, facts, tag, m, idx);
                r = group_probe(includes, opts, (size_t)n_opts, m, k, idx, state);
        }
        for (int round = 0; r == 0 && round < 2; round++) {
                waiting = 0;
                for (size_t i = 0; i < n; i++)
                        waiting += state[i] == MEMBER_MERGE;
                if (waiting < 2)
                        break;
                r = group_compile(c, jobs, srcs, n, arch, includes, opts, (size_t)n_opts, tag, state, facts, outs);
        }
        for (size_t i = 0; i < n && r == 0; i++) {
                int ri;
                if (state[i] == MEMBER_MERGED) {
                        merged++;
                        continue;
                }
                ri = compile_run(c, &jobs[i], &outs[i]);
                if (ri == -ENOMEM) {
                        r = ri;
                } else if (ri != 0) {
                        /* this source's compile failed the worker (-EIO): its own internal
                         * result, as alone; the others keep theirs */
                        outs[i].result = compile_internal_result(arch, c->nvrtc_version);
                        if (!outs[i].result)
                                r = -ENOMEM;
                }
        }
out:
        for (size_t i = 0; i < n; i++) {
                if (r != 0)
                        compile_output_clear(&outs[i]);
                free(srcs[i]);
                merge_facts_clear(&facts[i]);
        }
        for (size_t i = 0; i < LIMIT_OPTIONS_MAX; i++)
                free(oflags[i]);
        free(arch_opt);
        free(opts);
        if (ret_merged)
                *ret_merged = merged;
        return r;
}

/** compile_output_clear() - free an output's result and CUBIN; accepts a zeroed one. */
void compile_output_clear(CompileOutput *out)
{
        if (!out)
                return;
        json_decref(out->result);
        free(out->cubin);
        free(out->fenced);
        free(out->raw_log);
        memset(out, 0, sizeof(*out));
}
