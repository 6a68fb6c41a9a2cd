/*
 * Tests for the compile module's source scanner (worker/compile/compile_scan.c,
 * through compile_check_source() and compile_run(), with the real NVRTC of
 * this machine):
 *
 *   - the #include check: /etc/passwd in every spelling we know, computed
 *     includes, unknown headers, a symlink out of a fake toolkit; toolkit
 *     headers and the standard header shims still work; no host file
 *     content in any log;
 *   - host code (main, launches, the runtime API, PyTorch) refused line by
 *     line outside branches NVRTC skips;
 *   - a differential test against NVRTC's own preprocessor (a canary file:
 *     whenever NVRTC reads it, the check must have refused the source).
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

#include "common/limits.h"
#include "worker/compile/compile.h"
#include "worker/compile/stdshim.h"
#include "common/testcheck.h"
#include "worker/compile/testcompile.h"

/* Must be refused before NVRTC runs, with no host file content in the log. */
static void refused_include(const char *src, const char *why)
{
        CompileOutput out;
        const char *log;

        run("cuda", src, strlen(src), NULL, NULL, &out);
        log = jstr(out.result, "log");
        if (is_ok(&out) || strcmp(jstr(out.result, "error"), "compile") != 0 || !strstr(log, why)) {
                fprintf(stderr, "include not refused as expected (%s):\n--- source\n%s\n--- log\n%s\n",
                        why, src, log);
                failures++;
        }
        CHECK(!strstr(log, "root:") && !strstr(log, "/bin/"));
        compile_output_clear(&out);
}

static void accepted(const char *src)
{
        CompileOutput out;

        run("cuda", src, strlen(src), NULL, NULL, &out);
        if (!is_ok(&out)) {
                fprintf(stderr, "expected to compile:\n--- source\n%s\n--- log\n%s\n", src,
                        jstr(out.result, "log"));
                failures++;
        }
        compile_output_clear(&out);
}

#define KERNEL "extern \"C\" __global__ void k(float *p) { p[0] = 1; }\n"

static void t_includes(void)
{
        refused_include("#include \"/etc/passwd\"\n" KERNEL, "kernel.cu(1): error: #include \"/etc/passwd\": absolute");
        refused_include("#include </etc/passwd>\n" KERNEL, "absolute");
        refused_include(KERNEL "\n  #  include   \"/etc/passwd\"\n", "kernel.cu(3): error");
        refused_include("#/* comment */include \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("%:include \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("#inc\\\nlude \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("#include \"/etc/\\\npasswd\"\n" KERNEL, "absolute");
        refused_include("#include \"../../../../etc/passwd\"\n" KERNEL, "'..'");
        refused_include("#include <cuda/../../../../../etc/passwd>\n" KERNEL, "'..'");
        refused_include("#define F \"/etc/passwd\"\n#include F\n" KERNEL, "computed includes");
        refused_include("#include_next \"/etc/passwd\"\n" KERNEL, "#include_next is not allowed");
        refused_include("#import \"/etc/passwd\"\n" KERNEL, "#import is not allowed");
        refused_include("#embed \"/etc/passwd\"\n" KERNEL, "#embed is not allowed");
        refused_include("#include <cstdint.h>\n" KERNEL, "not a CUDA toolkit header");
        refused_include("#include \"passwd\"\n" KERNEL, "not a CUDA toolkit header");
        refused_include("#include <cuda/>\n" KERNEL, "not a CUDA toolkit header");
        refused_include("#include <cuda_fp16.h\n" KERNEL, "unterminated");
        refused_include("#include <cuda_fp16.h> // fine\n#if 0\n#include \"/proc/self/environ\"\n#endif\n" KERNEL,
                        "absolute");
        /* A comment opener inside a string does not hide the next line. */
        refused_include("const char *s = \"/*\";\n#include \"/etc/passwd\"\n// */\n" KERNEL, "absolute");
        refused_include("char c = '\"';\n#include \"/etc/passwd\"\n" KERNEL, "absolute");
        /* An unterminated literal ends at the end of its line, as in the compiler. */
        refused_include("char c = 'x;\n#include \"/etc/passwd\"\n" KERNEL, "absolute");
        /* Digit separators are not character literals. */
        refused_include("int x = 1'000; /* */\n#include \"/etc/passwd\"\n" KERNEL, "absolute");
        /* A block comment that spans lines leaves the next token at a line start. */
        refused_include("/* a\n*/ #include \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("\xef\xbb\xbf#include \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("\xc2\xa0#include \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("\x01 #include \"/etc/passwd\"\n" KERNEL, "absolute");
        refused_include("?\?=include \"/etc/passwd\"\n" KERNEL, "trigraphs");
        refused_include("#include \"/etc/passwd\" \\ \n" KERNEL, "backslash followed by blanks");
        refused_include("// \\ \n#include \"/etc/passwd\"\n" KERNEL, "backslash followed by blanks");
        refused_include("// x\r#include \"/etc/passwd\"\n" KERNEL, "carriage return");
        refused_include("#pragma GCC dependency \"/etc/passwd\"\n" KERNEL, "#pragma");
        refused_include("_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")\n" KERNEL, "_Pragma");
        refused_include("#if __has_include(\"/etc/passwd\")\n#endif\n" KERNEL, "__has_include");
        refused_include("#define P \"/etc/passwd\"\n#if __has_include(P)\n#endif\n" KERNEL, "__has_include");
        refused_include("const char *s = R\"x(\\\n)x\";\n" KERNEL, "raw string");

        /* What the check lets through still compiles. */
        accepted("#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\n#include <cuda/std/cstdint>\n"
                 "#include <mma.h>\n#include <cuda_pipeline.h>\n" KERNEL);
        accepted("#if __has_include(<cuda_fp8.h>)\n#endif\n" KERNEL);
        /* Directive-looking text inside literals and comments is not a directive. */
        accepted("__device__ const char s[] = R\"x(\n#include \"/etc/passwd\"\n)x\";\n" KERNEL);
        accepted("// #include \"/etc/passwd\"\n/*\n#include \"/etc/passwd\"\n*/\n" KERNEL);
        accepted("#define STR(x) #x\n#define LINE __LINE__\n#pragma unroll\n" KERNEL);
        accepted("__device__ int x = 0x1'0; __device__ char c = '#'; __device__ const char s[] = \"??\";\n" KERNEL);
}

/*
 * The standard header shims (worker/compile/stdshim.h) and the host code check.
 * The header corpus (test-corpus.c) covers the shims at large; here, the
 * rules at their edges.
 */
static void t_stdshim(void)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");
        char dirpath[4096];
        CompileOutput out;
        const char *log;
        struct dirent *de;
        size_t files = 0;
        DIR *d;

        /* Every file of worker/compile/stdshim/ is embedded (meson lists them one by one). */
        snprintf(dirpath, sizeof(dirpath), "%s/worker/compile/stdshim", root ? root : KEVALD_SOURCE_DIR);
        d = opendir(dirpath);
        CHECK(d != NULL);
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.') {
                        files++;
                        if (!stdshim_find(de->d_name) && strcmp(de->d_name, "cub.cuh") != 0) {
                                fprintf(stderr, "worker/compile/stdshim/%s is not embedded\n", de->d_name);
                                failures++;
                        }
                }
        if (d)
                closedir(d);
        CHECK(files == stdshim_count() && files > 30);
        CHECK(stdshim_find("cub/cub.cuh") != NULL && stdshim_find("cub.cuh") == NULL);
        CHECK(stdshim_find(STDSHIM_PRELUDE) != NULL && stdshim_find("iostream") == NULL);
        CHECK(stdshim_host_header("torch/extension.h") && stdshim_host_header("vector") &&
              !stdshim_host_header("torch") && !stdshim_host_header("cmath"));

        /* The shims, and what kevald_prelude.h gives without an #include. */
        accepted("#include <cmath>\n#include <math.h>\n#include <cstdint>\n#include <stdint.h>\n"
                 "#include <cfloat>\n#include <float.h>\n#include <climits>\n#include <limits.h>\n"
                 "#include <cstdio>\n#include <cassert>\n#include <algorithm>\n#include \"cuda.h\"\n"
                 "extern \"C\" __global__ void k(float *p, uint32_t n) { p[0] = std::max(std::sqrt(p[1]), "
                 "-INFINITY) + FLT_MAX * 0 + (float)INT_MAX + (float)UINT32_MAX + std::min<int>(n, 2); "
                 "assert(n > 0); }\n");
        accepted("extern \"C\" __global__ void k(float *p) { p[0] = -INFINITY + NAN + (float)M_PI + "
                 "(float)INT_MAX + std::sqrt(p[1]) + std::min(p[2], 1.0f); }\n");
        accepted("#if __has_include(<cmath>)\n#include <cmath>\n#else\n#error no cmath\n#endif\n" KERNEL);
        /* std::sqrt is ::sqrt: `using namespace std;` makes no call ambiguous. */
        accepted("#include <cmath>\n#include <algorithm>\nusing namespace std;\nextern \"C\" __global__ "
                 "void k(float *p, int n) { p[0] = sqrt(p[1]) + max(p[2], 0.f) + abs(n) + min(n, 3); }\n");
        /* libcu++'s <cuda/std/cmath> defines INFINITY and NAN itself: no redefinition. */
        {
                static const char lib[] = "#include <cuda/std/cmath>\n#include <cmath>\nextern \"C\" __global__ "
                                          "void k(float *p) { p[0] = -INFINITY + NAN + (float)M_PI; }\n";
                static const char lim[] = "#include <cuda/std/limits>\nextern \"C\" __global__ void "
                                          "k(float *p) { p[0] = -INFINITY + NAN; }\n";
                run("cuda", lib, strlen(lib), NULL, NULL, &out);
                CHECK(is_ok(&out) && !strstr(jstr(out.result, "log"), "redefinition"));
                compile_output_clear(&out);
                /* libcu++ without its <cmath>, and INFINITY: the prelude brings libcu++'s. */
                run("cuda", lim, strlen(lim), NULL, NULL, &out);
                CHECK(is_ok(&out) && !strstr(jstr(out.result, "log"), "redefinition"));
                compile_output_clear(&out);
        }
        /* A source that defines INFINITY or M_PI itself, as NVRTC code has had to: no warning. */
        {
                static const char own[] = "#define INFINITY __int_as_float(0x7f800000)\n#define M_PI 3.14159265f\n"
                                          "#define INT_MAX 2147483647\nextern \"C\" __global__ void k(float *p) "
                                          "{ p[0] = -INFINITY + M_PI + INT_MAX; }\n";
                run("cuda", own, strlen(own), NULL, NULL, &out);
                CHECK(is_ok(&out) && !strstr(jstr(out.result, "log"), "redefinition"));
                compile_output_clear(&out);
                CHECK(stdshim_prelude_macro("INFINITY", 8) && stdshim_prelude_macro("M_PI", 4) &&
                      stdshim_prelude_macro("INT_MAX", 7) && !stdshim_prelude_macro("FLT_MAX", 7) &&
                      !stdshim_prelude_macro("M_P", 3));
        }
        /* A diagnostic inside a shim is shown (the shims are ours), not withheld. */
        run("cuda", "#define printf 1\n#include <cstdio>\n" KERNEL,
            strlen("#define printf 1\n#include <cstdio>\n" KERNEL), NULL, NULL, &out);
        log = jstr(out.result, "log");
        CHECK(!is_ok(&out) && strstr(log, "cstdio(") && !strstr(log, "withheld"));
        compile_output_clear(&out);

        /* Host code, each place by line; the first line says what to do. */
        refused_include("int main() { return 0; }\n" KERNEL,
                        "kernel.cu(1): error: host code is not accepted: a main() function. Submit "
                        "device code only");
        refused_include(KERNEL "void f(float *p) {\n  k<<<1, 32>>>(p);\n  k << <1, 32 >> >(p);\n}\n",
                        "kernel.cu(3): error: host code is not accepted: a kernel launch (<<<...>>>)."
                        " Submit device code only");
        refused_include(KERNEL "void f(float *p) {\n  k<<<1, 32>>>(p);\n  k << <1, 32 >> >(p);\n}\n",
                        "\nkernel.cu(4): error: host code: a kernel launch (<<<...>>>)");
        refused_include("#include <torch/extension.h>\n" KERNEL, "kernel.cu(1): error: host code is not "
                        "accepted: #include <torch/extension.h> (PyTorch)");
        refused_include(KERNEL "void f() { float *d; cudaMalloc(&d, 4); }\n",
                        "kernel.cu(2): error: host code is not accepted: cudaMalloc() (a CUDA runtime API call)");
        refused_include(KERNEL "#if 1\nint main() { return 0; }\n#endif\n", "kernel.cu(3): error: host code");
        refused_include(KERNEL "#ifdef __CUDACC_RTC__\nint main() { return 0; }\n#endif\n", "kernel.cu(3): error: host code");
        refused_include(KERNEL "#if 0\n#elif 1\nint main() { return 0; }\n#endif\n", "kernel.cu(4): error: host code");
        /* Nine lines of host code: eight named, then a count. */
        refused_include(KERNEL "int main() {\n cudaFree(0);\n cudaFree(0);\n cudaFree(0);\n cudaFree(0);\n"
                        " cudaFree(0);\n cudaFree(0);\n cudaFree(0);\n cudaFree(0); cudaFree(0);\n}\n",
                        "kernel.cu(9): error: host code: cudaFree() (a CUDA runtime API call)\n"
                        "(1 more lines with host code)");
        /* Where NVRTC is known not to look, host code is no reason to refuse. */
        accepted(KERNEL "#ifndef __CUDACC_RTC__\nint main() { float *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); }\n#endif\n");
        accepted(KERNEL "#if !defined(__CUDA_ARCH__)\nint main() { return 0; }\n#endif\n");
        accepted(KERNEL "#if 0\nint main() { return 0; }\n#else\n#endif\n");
        accepted(KERNEL "#ifdef __CUDACC_RTC__\n#else\n#if 1\nint main() { return 0; }\n#endif\n#endif\n");
        accepted("// int main() { k<<<1, 1>>>(); }\n" KERNEL "__device__ const char *s = \"cudaMalloc(\";\n");
        accepted("struct S { __device__ int f() { return 1; } };\n__device__ int g(S s) { return s.f(); }\n" KERNEL);
        /* Device-side runtime intrinsics are not host code (NVRTC has its say on them). */
        run("cuda", KERNEL "__device__ void w() { cudaGridDependencySynchronize(); }\n",
            strlen(KERNEL "__device__ void w() { cudaGridDependencySynchronize(); }\n"), NULL, NULL, &out);
        CHECK(!strstr(jstr(out.result, "log"), "host code"));
        compile_output_clear(&out);
        /* #include lines are checked in every branch, known-skipped ones too. */
        refused_include("#if 0\n#include \"/etc/passwd\"\n#endif\n" KERNEL, "absolute");
        refused_include("#ifndef __CUDACC_RTC__\n#include <torch/extension.h>\n#endif\n" KERNEL,
                        "host code is not accepted: #include <torch/extension.h>");
}

/*
 * The #include check against the real preprocessor. Each source below
 * names a canary file (@F@: its absolute path; @R@: a relative path with
 * "..", @S@: the absolute path with a line continuation in it) whose text
 * is a token that NVRTC echoes when it reads the file. NVRTC is called
 * directly (dlopen: this test is not the compile module and does not
 * include <nvrtc.h>), without the check; whenever NVRTC read the canary,
 * compile_check_source() must have refused the source, and compile_run()
 * must never put the token into a log.
 */
typedef int (*NvrtcCreate)(void **, const char *, const char *, int, const char *const *,
                           const char *const *);
typedef int (*NvrtcCompile)(void *, int, const char *const *);
typedef int (*NvrtcLogSize)(void *, size_t *);
typedef int (*NvrtcLog)(void *, char *);
typedef int (*NvrtcDestroy)(void **);

#define CANARY "kevald_canary_token_7f3a"

static const struct {
        const char *src;
        int nvrtc_reads; /* 1: must read the canary, 0: must not, -1: either */
} differential[] = {
        { "#include \"@F@\"\n", 1 },
        { "#include <@F@>\n", 1 },
        { "  #  include   \"@F@\"\n", 1 },
        { "\t#\tinclude\t\"@F@\"\n", 1 },
        { "\f#include \"@F@\"\n", -1 },
        { "#/* c */include \"@F@\"\n", 1 },
        { "# /* a\nb */ include \"@F@\"\n", -1 },
        { "%:include \"@F@\"\n", -1 },
        { "#inc\\\nlude \"@F@\"\n", 1 },
        { "#include \"@S@\"\n", 1 },
        { "#include \"@R@\"\n", 1 },
        { "#include <cuda/@R@>\n", -1 },
        { "#define F \"@F@\"\n#include F\n", 1 },
        { "#define S(x) #x\n#define T(x) S(x)\n#include T(@F@)\n", -1 },
        { "#include_next \"@F@\"\n", -1 },
        { "#import \"@F@\"\n", -1 },
        { "#embed \"@F@\"\n", -1 },
        { "#if 0\n#include \"@F@\"\n#endif\n", 0 },
        { "const char *s = \"/*\";\n#include \"@F@\"\n// */\n", 1 },
        { "char c = '\"';\n#include \"@F@\"\n", 1 },
        { "char c = 'x;\n#include \"@F@\"\n", -1 },
        { "int x = 1'000; /* */\n#include \"@F@\"\n", 1 },
        { "/* a\n*/ #include \"@F@\"\n", -1 },
        { "int y; /* a\n*/ #include \"@F@\"\n", -1 },
        { "\xef\xbb\xbf#include \"@F@\"\n", -1 },
        { "\xc2\xa0#include \"@F@\"\n", -1 },
        { "\x01 #include \"@F@\"\n", -1 },
        { "?\?=include \"@F@\"\n", -1 },
        { "// \\ \n#include \"@F@\"\n", -1 },
        { "// x\r#include \"@F@\"\n", -1 },
        { "#pragma GCC dependency \"@F@\"\n", -1 },
        { "#define X(a) a\nint X(\n#include \"@F@\"\n);\n", -1 },
        { "const char *s = R\"x(\n#include \"@F@\"\n)x\";\n", 0 },
        { "const char *s = R\"x(\\\n)x\"; /* )x\" */\n#include \"@F@\"\n", -1 },
        { "// #include \"@F@\"\n/*\n#include \"@F@\"\n*/\n", 0 },
        { "// hi \\\n#include \"@F@\"\n", 0 },
        { "/\\\n*\n#include \"@F@\"\n*\\\n/\n", 0 },
};

static void sym(const char *name, void *h, void *ret_fn, size_t size)
{
        void *p = dlsym(h, name);

        if (size == sizeof(p))
                memcpy(ret_fn, &p, size);
        else
                memset(ret_fn, 0, size);
}

static char *expand(const char *tmpl, const char *abs, const char *rel, const char *spliced)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        for (const char *p = tmpl; *p; p++) {
                if (strncmp(p, "@F@", 3) == 0) {
                        fputs(abs, f);
                        p += 2;
                } else if (strncmp(p, "@R@", 3) == 0) {
                        fputs(rel, f);
                        p += 2;
                } else if (strncmp(p, "@S@", 3) == 0) {
                        fputs(spliced, f);
                        p += 2;
                } else {
                        fputc(*p, f);
                }
        }
        fclose(f);
        return out;
}

static void t_differential(void)
{
        const char *cuda = getenv("KEVALD_CUDA_HOME") ? getenv("KEVALD_CUDA_HOME") : "/usr/local/cuda";
        char lib[4096], inc1[4200], inc2[4200], dir[] = "/tmp/kevald-canary-XXXXXX", abs[256], rel[512],
             spliced[300], read_by_nvrtc[1024] = "";
        void *h;
        NvrtcCreate create;
        NvrtcCompile compile;
        NvrtcLogSize log_size;
        NvrtcLog get_log;
        NvrtcDestroy destroy;
        FILE *f;
        int reads = 0;

        snprintf(lib, sizeof(lib), "%s/lib64/libnvrtc.so", cuda);
        h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        CHECK(h != NULL);
        if (!h)
                return;
        /* ISO C has no object-to-function pointer cast: copy the bits (POSIX guarantees them). */
        sym("nvrtcCreateProgram", h, &create, sizeof(create));
        sym("nvrtcCompileProgram", h, &compile, sizeof(compile));
        sym("nvrtcGetProgramLogSize", h, &log_size, sizeof(log_size));
        sym("nvrtcGetProgramLog", h, &get_log, sizeof(get_log));
        sym("nvrtcDestroyProgram", h, &destroy, sizeof(destroy));
        CHECK(create && compile && log_size && get_log && destroy);
        if (!mkdtemp(dir) || !create || !compile || !log_size || !get_log || !destroy) {
                CHECK(0);
                return;
        }
        snprintf(abs, sizeof(abs), "%s/canary.h", dir);
        snprintf(rel, sizeof(rel), "../../../../../../../../../../../../../../..%s", abs);
        snprintf(spliced, sizeof(spliced), "/\\\n%s", abs + 1);
        f = fopen(abs, "w");
        CHECK(f != NULL);
        if (!f)
                return;
        fputs(CANARY " here\n", f);
        fclose(f);
        snprintf(inc1, sizeof(inc1), "-I%s/include", cuda);
        snprintf(inc2, sizeof(inc2), "-I%s/include/cccl", cuda);

        for (size_t i = 0; i < sizeof(differential) / sizeof(differential[0]); i++) {
                char *src = expand(differential[i].src, abs, rel, spliced), *raw = NULL, msg[512];
                const char *opts[] = { "-arch=sm_90a", inc1, inc2 };
                void *prog = NULL;
                size_t n = 0;
                bool read_it;
                int checked;
                CompileOutput out;

                if (!src) {
                        CHECK(0);
                        continue;
                }
                CHECK(create(&prog, src, "kernel.cu", 0, NULL, NULL) == 0);
                (void)compile(prog, 3, opts);
                if (log_size(prog, &n) == 0 && (raw = calloc(1, n + 1)) != NULL)
                        (void)get_log(prog, raw);
                destroy(&prog);
                read_it = raw && strstr(raw, CANARY);
                free(raw);
                checked = compile_check_source(comp, src, strlen(src), NULL, msg, sizeof(msg));
                if (read_it) {
                        reads++;
                        snprintf(read_by_nvrtc + strlen(read_by_nvrtc), sizeof(read_by_nvrtc) - strlen(read_by_nvrtc),
                                 " %zu", i);
                }
                if (read_it && checked != COMPILE_E_REJECTED) {
                        fprintf(stderr, "NVRTC read the canary but the check let it through:\n%s\n", src);
                        failures++;
                }
                if (differential[i].nvrtc_reads >= 0 && (int)read_it != differential[i].nvrtc_reads) {
                        fprintf(stderr, "case %zu: expected NVRTC %s the canary:\n%s\n", i,
                                differential[i].nvrtc_reads ? "to read" : "not to read", src);
                        failures++;
                }
                /* The whole pipeline never shows it, whatever the case. */
                run("cuda", src, strlen(src), NULL, NULL, &out);
                CHECK(out.result && !strstr(jstr(out.result, "log"), CANARY));
                compile_output_clear(&out);
                free(src);
        }
        printf("differential #include check: NVRTC read the canary in %d of %zu cases (%s); the check "
               "refused all of them\n", reads, sizeof(differential) / sizeof(differential[0]),
               read_by_nvrtc + 1);

        /*
         * Random sources from lexical fragments (fixed seed: the same cases every
         * run). A one-off run of 2,700 such cases saw NVRTC read the canary 275
         * times and the check refuse every one.
         */
        {
                static const char *const frag[] = {
                        "\n", " ", "\t", "\\\n", "/*", "*/", "//", "\"", "'", "R\"x(", ")x\"", "#",
                        "%:", "include", "\"@F@\"", "<@F@>", "u8", "1'0", "#define A ", "A", "(", ")",
                        "x", ";", "\r\n", "\\", "*", "/", "#include \"@F@\"\n",
                        "\n#include \"@F@\"\n", "#if 0\n", "#endif\n", "R\"(", ")\"", "'\"'", "\"'\"",
                        "#define S(x) #x\n", "S(", "\\\r\n", "\f",
                };
                unsigned seed = 20261121;
                int cases = 0, random_reads = 0;
                for (int it = 0; it < 400 && cases < 150; it++) {
                        char tmpl[1024], *src, *raw = NULL, msg[512];
                        const char *opts[] = { "-arch=sm_90a", inc1, inc2 };
                        size_t len = 0, n = 0;
                        void *prog = NULL;
                        int k = 3 + (int)(rand_r(&seed) % 14);
                        for (int j = 0; j < k; j++) {
                                const char *fr = frag[rand_r(&seed) % (sizeof(frag) / sizeof(frag[0]))];
                                if (len + strlen(fr) + 1 < sizeof(tmpl)) {
                                        memcpy(tmpl + len, fr, strlen(fr));
                                        len += strlen(fr);
                                }
                        }
                        tmpl[len] = '\0';
                        if (!strstr(tmpl, "@F@"))
                                continue;
                        cases++;
                        src = expand(tmpl, abs, rel, spliced);
                        if (!src)
                                continue;
                        if (create(&prog, src, "kernel.cu", 0, NULL, NULL) == 0) {
                                (void)compile(prog, 3, opts);
                                if (log_size(prog, &n) == 0 && (raw = calloc(1, n + 1)) != NULL)
                                        (void)get_log(prog, raw);
                                destroy(&prog);
                        }
                        if (raw && strstr(raw, CANARY)) {
                                random_reads++;
                                if (compile_check_source(comp, src, strlen(src), NULL, msg, sizeof(msg)) !=
                                    COMPILE_E_REJECTED) {
                                        fprintf(stderr, "NVRTC read the canary but the check let it "
                                                "through:\n%s\n", src);
                                        failures++;
                                }
                        }
                        free(raw);
                        free(src);
                }
                printf("random sources: %d cases, NVRTC read the canary in %d, the check refused all of "
                       "them\n", cases, random_reads);
                CHECK(random_reads > 0);
        }
        unlink(abs);
        rmdir(dir);
        dlclose(h);
}

/* A fake toolkit whose include folder has a symlink pointing outside it. */
static void t_symlink(void)
{
        char tmpl[] = "/tmp/kevald-test-cuda-XXXXXX", path[4200], msg[512];
        Compiler *fake = NULL;
        const char *good = "#include <good.h>\n", *evil = "#include <evil.h>\n",
                   *sub = "#include <sub/../good.h>\n", *dir = "#include <sub>\n";
        FILE *f;

        if (!mkdtemp(tmpl)) {
                CHECK(0);
                return;
        }
        snprintf(path, sizeof(path), "%s/include", tmpl);
        CHECK(mkdir(path, 0700) == 0);
        snprintf(path, sizeof(path), "%s/include/sub", tmpl);
        CHECK(mkdir(path, 0700) == 0);
        snprintf(path, sizeof(path), "%s/include/good.h", tmpl);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (f)
                fclose(f);
        snprintf(path, sizeof(path), "%s/include/evil.h", tmpl);
        CHECK(symlink("/etc/passwd", path) == 0);
        CHECK(compile_open(tmpl, &fake) == 0);
        if (fake) {
                CHECK(compile_check_source(fake, good, strlen(good), NULL, msg, sizeof(msg)) == 0);
                CHECK(compile_check_source(fake, evil, strlen(evil), NULL, msg, sizeof(msg)) == COMPILE_E_REJECTED);
                CHECK(strstr(msg, "not a CUDA toolkit header") != NULL);
                CHECK(compile_check_source(fake, sub, strlen(sub), NULL, msg, sizeof(msg)) == COMPILE_E_REJECTED);
                CHECK(compile_check_source(fake, dir, strlen(dir), NULL, msg, sizeof(msg)) == COMPILE_E_REJECTED);
        }
        compile_close(fake);
        unlink(path);
        snprintf(path, sizeof(path), "%s/include/good.h", tmpl);
        unlink(path);
        snprintf(path, sizeof(path), "%s/include/sub", tmpl);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/include", tmpl);
        rmdir(path);
        rmdir(tmpl);
        CHECK(compile_open("/nonexistent-cuda", &fake) == -ENOENT);
}

int main(void)
{
        CHECK(compile_open(getenv("KEVALD_CUDA_HOME"), &comp) == 0);
        if (!comp)
                return 1;
        t_includes();
        t_stdshim();
        t_differential();
        t_symlink();
        compile_close(comp);
        if (failures)
                fprintf(stderr, "test-compile-scan: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
