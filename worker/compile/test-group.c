/*
 * test-group - merged compiles (compile_run_group(), worker/compile/group.h)
 * against compiles alone, with the real NVRTC: every member of a group must
 * get what compile_run() gives it alone (ok, error, log, kernels and their
 * resources), and the members expected to merge must have merged (a
 * "group_prefix"), so that neither a wrong result nor a merge that never
 * happens passes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/readfile.h"
#include "common/testcheck.h"
#include "worker/compile/compile.h"
#include "worker/compile/testcompile.h"

#define TAG 0x5eed1234abcd0042ull

/* @kernels sorted by name (a merged CUBIN may list a member's kernels in another order). */
static json_t *sorted(json_t *kernels)
{
        json_t *c = json_deep_copy(kernels);
        size_t n = json_array_size(c);

        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0; j--) {
                        json_t *a = json_array_get(c, j - 1), *b = json_array_get(c, j);
                        if (strcmp(jstr(a, "name"), jstr(b, "name")) <= 0)
                                break;
                        json_incref(a);
                        json_incref(b);
                        json_array_set_new(c, j - 1, b);
                        json_array_set_new(c, j, a);
                }
        return c;
}

static void same_result(const char *what, size_t i, json_t *alone, json_t *grouped)
{
        static const char *const keys[] = { "ok", "error", "log", "log_truncated", "lowered_names", "arch", "nvrtc" };
        json_t *a = sorted(json_object_get(alone, "kernels")), *g = sorted(json_object_get(grouped, "kernels"));

        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
                json_t *x = json_object_get(alone, keys[k]), *y = json_object_get(grouped, keys[k]);
                if (!(x == y || (x && y && json_equal(x, y)))) {
                        char *xs = x ? json_dumps(x, JSON_ENCODE_ANY) : NULL, *ys = y ? json_dumps(y, JSON_ENCODE_ANY) : NULL;
                        fprintf(stderr, "%s, member %zu: %s alone %s, grouped %s\n", what, i, keys[k],
                                xs ? xs : "(none)", ys ? ys : "(none)");
                        free(xs);
                        free(ys);
                        CHECK(!"the grouped result differs");
                }
        }
        if (!json_equal(a, g)) {
                char *xs = json_dumps(a, 0), *ys = json_dumps(g, 0);
                fprintf(stderr, "%s, member %zu: kernels alone %s, grouped %s\n", what, i, xs, ys);
                free(xs);
                free(ys);
                CHECK(!"the grouped kernels differ");
        }
        json_decref(a);
        json_decref(g);
}

/* Group @srcs (NULL-terminated); @merged: 'm' where a member must merge, '.' where it must not,
 * '?' where either will do (the result must still be the one alone). */
static void group(const char *what, const char *const *srcs, const char *merged)
{
        CompileJob jobs[COMPILE_GROUP_MAX];
        CompileOutput outs[COMPILE_GROUP_MAX], alone;
        size_t n = 0, n_merged = 0, want = 0, maybe = 0;

        while (srcs[n])
                n++;
        CHECK(n <= COMPILE_GROUP_MAX && strlen(merged) == n);
        for (size_t i = 0; i < n; i++) {
                jobs[i] = (CompileJob){ .language = "cuda", .source = srcs[i], .source_len = strlen(srcs[i]),
                                        .no_fence = true };
                want += merged[i] == 'm';
                maybe += merged[i] == '?';
        }
        CHECK(compile_run_group(comp, jobs, n, TAG, outs, &n_merged) == 0);
        for (size_t i = 0; i < n; i++) {
                json_t *prefix = json_object_get(outs[i].result, "group_prefix");
                memset(&alone, 0, sizeof(alone));
                if (compile_run(comp, &jobs[i], &alone) != 0)
                        /* the worker answers such a source "internal" alone (handle_job()) */
                        CHECK(prefix == NULL && strcmp(jstr(outs[i].result, "error"), "internal") == 0);
                else
                        same_result(what, i, alone.result, outs[i].result);
                if (merged[i] != '?' && (prefix != NULL) != (merged[i] == 'm')) {
                        fprintf(stderr, "%s, member %zu: %s, expected %s\n", what, i,
                                prefix ? "merged" : "alone", merged[i] == 'm' ? "merged" : "alone");
                        CHECK(!"merged or not as expected");
                }
                if (prefix)
                        CHECK(outs[i].cubin && outs[i].cubin_len > 0); /* the merged program's */
                compile_output_clear(&alone);
                compile_output_clear(&outs[i]);
        }
        CHECK(n_merged >= want && n_merged <= want + maybe);
        printf("ok   %s: %zu of %zu merged\n", what, n_merged, n);
}

#define SCALE(n) "// candidate " #n "\nextern \"C\" __global__ void k(float *x, int n) {\n" \
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= " #n ".0f; }\n"

#define HELPER(n) "__device__ __forceinline__ float warp_sum(float v) {\n" \
        "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n  return v; }\n" \
        "extern \"C\" __global__ void __launch_bounds__(256) rowsum(const float* __restrict__ x, float *y, int n) {\n" \
        "  float s = 0.0f;\n#pragma unroll 4\n  for (int i = threadIdx.x; i < n; i += 32) s += x[blockIdx.x * n + i] * " #n ".0f;\n" \
        "  s = warp_sum(s); if (threadIdx.x == 0) y[blockIdx.x] = s; }\n"

/*
 * The header corpus (tests/compile/corpus/: kernels as models and people write them) grouped
 * eight at a time in manifest order, as a batch of them would be: every member must get what it
 * gets alone; prints how many merged (none need to: the differential is the point).
 */
static void corpus(void)
{
        const char *root = getenv("KEVALD_SOURCE_ROOT");
        char dir[4096], path[4400], *srcs[COMPILE_GROUP_MAX + 1] = { 0 }, tag[64];
        json_t *manifest, *k;
        json_error_t err;
        size_t i, n = 0, groups = 0;
        char merged[COMPILE_GROUP_MAX + 1];

        snprintf(dir, sizeof(dir), "%s/tests/compile/corpus", root ? root : KEVALD_SOURCE_DIR);
        snprintf(path, sizeof(path), "%s/manifest.json", dir);
        manifest = json_load_file(path, 0, &err);
        CHECK(manifest != NULL);
        if (!manifest)
                return;
        json_array_foreach(json_object_get(manifest, "kernels"), i, k) {
                size_t len;
                snprintf(path, sizeof(path), "%s/%s", dir, jstr(k, "file"));
                srcs[n] = NULL;
                CHECK(readfile_all(path, 1 << 20, &srcs[n], &len) == 0);
                if (srcs[n])
                        n++;
                if (n == 8 || (i + 1 == json_array_size(json_object_get(manifest, "kernels")) && n > 0)) {
                        memset(merged, '?', n);
                        merged[n] = '\0';
                        srcs[n] = NULL;
                        snprintf(tag, sizeof(tag), "corpus group %zu", ++groups);
                        group(tag, (const char *const *)srcs, merged);
                        for (size_t j = 0; j < n; j++)
                                free(srcs[j]);
                        n = 0;
                }
        }
        json_decref(manifest);
}

int main(void)
{
        CHECK(compile_open(getenv("KEVALD_CUDA_HOME"), &comp) == 0);

        group("same kernel name", (const char *const[]){ SCALE(1), SCALE(2), SCALE(3), SCALE(4), NULL }, "mmmm");
        group("same helper names, launch bounds, pragma unroll",
              (const char *const[]){ HELPER(1), HELPER(2), HELPER(3), NULL }, "mmm");
        group("an error among good ones: the others merged again",
              (const char *const[]){ SCALE(1), "extern \"C\" __global__ void k(float *x) { x[0] = nope(1); }\n",
                                     SCALE(2), SCALE(3), NULL }, "m.mm");
        group("warnings: each member's own, with NVRTC's remark",
              (const char *const[]){ "extern \"C\" __global__ void k(float *x) {\n  int unused;\n  x[0] = 1.0f; }\n",
                                     SCALE(5), "extern \"C\" __global__ void k(float *x) {\n  int a, b;\n  x[0] = 2.0f; }\n",
                                     NULL }, "mmm");
        group("a helper named like a CUDA math function: the probe finds fmaxf, so alone",
              (const char *const[]){ "__device__ float fmaxf(float a, float b) { return a > b ? a : b; }\n"
                                     "extern \"C\" __global__ void k(float *x) { x[0] = fmaxf(x[0], 1.0f); }\n",
                                     SCALE(1), SCALE(2), NULL }, ".mm");
        group("a kernel named like a builtin",
              (const char *const[]){ "extern \"C\" __global__ void sinf(float *x) { x[0] = 1.0f; }\n", SCALE(1),
                                     SCALE(2), NULL }, ".mm");
        group("a source that closes its namespace, and one that uses what it leaked",
              (const char *const[]){ "} __device__ float leaked(float v) { return v; } namespace q {\n"
                                     "extern \"C\" __global__ void k(float *x) { x[0] = leaked(1.0f); }\n",
                                     "extern \"C\" __global__ void k(float *x) { x[0] = leaked(2.0f); }\n",
                                     SCALE(1), SCALE(2), NULL }, "..mm");
        group("a macro of one member is not another's",
              (const char *const[]){ "#define SCALE_BY 3.0f\nextern \"C\" __global__ void k(float *x) { x[0] = SCALE_BY; }\n",
                                     "extern \"C\" __global__ void k(float *x) { x[0] = SCALE_BY; }\n", SCALE(1),
                                     NULL }, "m.m");
        group("a macro that opens a brace, #undef, other pragmas, a brace under #if",
              (const char *const[]){ "#define OPEN {\nextern \"C\" __global__ void k(float *x) OPEN x[0] = 1.0f; }\n",
                                     "#define M 1\n#undef M\nextern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n",
                                     "#pragma push_macro(\"M\")\nextern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n",
                                     "#if 1\nextern \"C\" __global__ void k(float *x) {\n#else\n{\n#endif\n x[0] = 1.0f; }\n",
                                     SCALE(1), SCALE(2), NULL }, "....mm");
        group("headers: the most common set merges, __half without its header fails alone",
              (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void h(__half *x) { x[0] = __float2half(1.0f); }\n",
                                     "#include <cuda_fp16.h>\n#include <cmath>\nextern \"C\" __global__ void h(__half *x) { x[0] = __float2half(2.0f); }\n",
                                     "extern \"C\" __global__ void h(__half *x) { x[0] = __float2half(3.0f); }\n",
                                     SCALE(1), SCALE(2), SCALE(3), NULL }, "...mmm");
        group("templates, an extern \"C\" block, using namespace std, INFINITY",
              (const char *const[]){ "#include <cmath>\nusing namespace std;\ntemplate <int N> __device__ float pw(float v) { float r = 1; for (int i = 0; i < N; i++) r *= v; return r; }\n"
                                     "extern \"C\" {\n__global__ void a(float *x) { x[0] = pw<3>(x[0]); }\n__global__ void b(float *x) { x[0] = std::min(x[0], INFINITY); }\n}\n",
                                     "#include <cmath>\nusing namespace std;\ntemplate <int N> __device__ float pw(float v) { return v * N; }\n"
                                     "extern \"C\" {\n__global__ void a(float *x) { x[0] = pw<2>(x[0]); }\n__global__ void b(float *x) { x[0] = fmaxf(x[0], -INFINITY); }\n}\n",
                                     NULL }, "mm");
        group("a C++ kernel (mangled without the namespace alone), an enum",
              (const char *const[]){ "__global__ void cpp_kernel(float *x) { x[0] = 1.0f; }\n",
                                     "enum Mode { A, B };\nextern \"C\" __global__ void k(float *x) { x[0] = A; }\n",
                                     SCALE(1), SCALE(2), NULL }, "..mm");
        group("a macro before an #include, using std::min, a max() in an anonymous namespace",
              (const char *const[]){ "#define __CUDA_NO_HALF_OPERATORS__\n#include <cuda_fp16.h>\nextern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n",
                                     "#include <algorithm>\nusing std::min;\nextern \"C\" __global__ void k(float *x) { x[0] = min(x[0], 1.0f); }\n",
                                     "namespace { __device__ float max(float a, float b) { return a > b ? a : b; } }\n"
                                     "extern \"C\" __global__ void k(float *x) { x[0] = max(x[0], 1.0f); }\n",
                                     "void (*fp)(int);\nextern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n",
                                     "struct Pair { float a, b; };\nnamespace util { __device__ float twice(float v) { return 2 * v; } }\n"
                                     "extern \"C\" __global__ void k(Pair *p) { p->a = util::twice(p->b); }\n",
                                     "struct Pair { double a, b; };\nnamespace util { __device__ double twice(double v) { return 2 * v; } }\n"
                                     "extern \"C\" __global__ void k(Pair *p) { p->a = util::twice(p->b); }\n",
                                     NULL }, "....mm");
        /* A review's attempts (session 18) to make a member's result differ from its result alone,
         * or one member change another's: header macros that close the namespace, a using-directive
         * beside a name of its own, inline and named namespaces, declarations made by a macro, an
         * unterminated comment, _Pragma and __FILE__ in macros, #ifdef on a renamed name, __func__,
         * the tag read back through a diagnostic and a kernel named with it. */
        group("review t1", (const char *const[]){ "#ifdef k\n#define EXTRA , int extra\n#else\n#define EXTRA\n#endif\nextern \"C\" __global__ void k(float *x EXTRA) { x[0] = 1.0f; }\n",
                                     "extern \"C\" __global__ void k(float *x) { x[0] = 2.0f; }\n", NULL }, "??");
        group("review t2", (const char *const[]){ "namespace v1 { __device__ float fmaxf(float a, float b) { return a - b; } }\nusing namespace v1;\nextern \"C\" __global__ void k(float *x) { x[0] = fmaxf(x[1], x[2]); }\n",
                                     "extern \"C\" __global__ void k(float *x) { x[0] = 2.0f; }\n", NULL }, "??");
        group("review t3b", (const char *const[]){ "inline namespace v1 { __device__ float fmaxf(float a, float b) { return a - b; } }\nextern \"C\" __global__ void k(float *x) { x[0] = fmaxf(x[1], x[2]); }\n",
                                     "extern \"C\" __global__ void k(float *x) { x[0] = 2.0f; }\n", NULL }, "??");
        group("review t4", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n/*",
                                     "/* a kernel */\n__global__ void kb(float *x) { x[0] = 2.0f; }\n",
                                     "extern \"C\" __global__ void kc(float *x) { x[0] = 3.0f; }\n", NULL }, "???");
        group("review t6", (const char *const[]){ "#define P1 _Pragma(\"nv_diagnostic pop\") _Pragma(\"nv_diag_suppress 177\") _Pragma(\"nv_diagnostic push\")\n__device__ void helper_a(void) { P1 }\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n",
                                     "extern \"C\" __global__ void kb(float *x) {\n  int unused;\n  x[0] = 2.0f; }\n", NULL }, "??");
        group("review t7", (const char *const[]){ "extern \"C\" __global__ void k(float *x) { __shared__ char s[sizeof(__func__) * 16]; s[threadIdx.x] = x[0]; __syncthreads(); x[1] = s[threadIdx.x ^ 1]; }\n",
                                     "extern \"C\" __global__ void kb(float *x) {\n  int unused;\n  x[0] = 2.0f; }\n", NULL }, "??");
        group("review t8", (const char *const[]){ "#define FN __FILE__\nextern \"C\" __global__ void k(float *x) { __shared__ char s[sizeof(FN) * 16]; s[threadIdx.x] = x[0]; __syncthreads(); x[1] = s[threadIdx.x ^ 1]; }\n",
                                     "extern \"C\" __global__ void kb(float *x) {\n  int unused;\n  x[0] = 2.0f; }\n", NULL }, "??");
        group("review t9", (const char *const[]){ "__device__ float f(float *x) { __shared__ char s[sizeof(__PRETTY_FUNCTION__) * 16]; s[threadIdx.x] = x[0]; __syncthreads(); return s[threadIdx.x ^ 1]; }\nextern \"C\" __global__ void k(float *x) { x[1] = f(x); }\n",
                                     "extern \"C\" __global__ void kb(float *x) {\n  int unused;\n  x[0] = 2.0f; }\n", NULL }, "??");
        group("review t10", (const char *const[]){ "#define PK _Pragma(\"pack(1)\")\nPK extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n",
                                     "struct S { char c; float f; };\nextern \"C\" __global__ void kb(S s, float *x) { x[0] = s.f + s.c; }\n", NULL }, "??");
        group("review t11", (const char *const[]){ "#define DECL __device__ float helper(float);\nextern \"C\" { DECL }\nextern \"C\" __global__ void ka(float *x) { x[0] = helper(x[1]); }\n",
                                     "#define DEF __device__ float helper(float v) { return v * 2.0f; }\nextern \"C\" { DEF }\nextern \"C\" __global__ void kb(float *x) { x[0] = helper(x[1]); }\n", NULL }, "??");
        group("review t12", (const char *const[]){ "#define HELPER __device__ float fmaxf(double a, float b) { return a - b; }\nHELPER\nextern \"C\" __global__ void k(float *x) { x[0] = fmaxf(1, 2); }\n",
                                     "extern \"C\" __global__ void kb(float *x) {\n  int unused;\n  x[0] = 2.0f; }\n", NULL }, "??");
        group("review t17", (const char *const[]){ "#define FN __FILE__\ntemplate <char C0, char C1, char C2, char C3, char C4, char C5, char C6, char C7> __device__ int leak() { signed char v = C0 * 1000; return v; }\nextern \"C\" __global__ void k(float *x) { x[0] = leak<FN[5], FN[6], FN[7], FN[8], FN[9], FN[9], FN[9], FN[9]>(); }\n",
                                     "extern \"C\" __global__ void kb(float *x) {\n  int unused;\n  x[0] = 2.0f; }\n", NULL }, "??");
        group("review t19", (const char *const[]){ "#include <cooperative_groups.h>\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n_LIBCUDACXX_BEGIN_NAMESPACE_CUDA _LIBCUDACXX_END_NAMESPACE_STD\n#define HIJACK __device__ float fmaxf(float a, int b) { __shared__ float s[1024]; s[threadIdx.x] = a; __syncthreads(); return s[threadIdx.x ^ 1] + b; }\nHIJACK\n_LIBCUDACXX_BEGIN_NAMESPACE_STD _LIBCUDACXX_END_NAMESPACE_CUDA\n",
                                     "#include <cooperative_groups.h>\nextern \"C\" __global__ void relu(float *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = fmaxf(x[i], 0);\n}\n", NULL }, "??");
        group("review t19b", (const char *const[]){ "#include <cooperative_groups.h>\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n_LIBCUDACXX_BEGIN_NAMESPACE_CUDA _LIBCUDACXX_END_NAMESPACE_STD\n__device__ float helperz(float v) { return v + 1.0f; }\n_LIBCUDACXX_BEGIN_NAMESPACE_STD _LIBCUDACXX_END_NAMESPACE_CUDA\n",
                                     "#include <cooperative_groups.h>\nextern \"C\" __global__ void kb(float *x) { x[0] = helperz(x[0]); }\n",
                                     "#include <cooperative_groups.h>\nextern \"C\" __global__ void kc(float *x) { x[0] = 3.0f; }\n", NULL }, "???");
        group("review t22", (const char *const[]){ "#include <algorithm>\nusing namespace std;\ntemplate <class T> __device__ void swap(T &a, T &b) { T t = a; a = b; b = t; }\nextern \"C\" __global__ void k(float *x) { float a = x[0], b = x[1]; swap(a, b); x[0] = a; x[1] = b; }\n",
                                     "#include <algorithm>\nextern \"C\" __global__ void k(float *x) { x[0] = std::min(x[0], x[1]); }\n", NULL }, "??");
        group("review t23", (const char *const[]){ "#define DEF __global__ void __kvg5eed1234_1_extra(float *x) { x[0] = 42.0f; }\nextern \"C\" { DEF }\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 2.0f; }\n", NULL }, "??");
        /* A second review's (session 18): a keyword-named macro that switched the end-of-namespace
         * check off, a parenthesised declarator, extern "C++", a stringified renamed name,
         * __builtin_FILE, ADL from a template to a later overload, unused statics (warned of alone,
         * not in a namespace), a last declaration left open, half intrinsics inlined across members. */
        group("review 2 c1", (const char *const[]){ "// only a comment\n/* and another */\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 c2", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n// trailing \\",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 c3", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) {\n int q = 1;\n x[0] = 1.0f; }\n#define FOO 1 \\\n + 2\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 c5", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n#define Z 1 ?\?/\nstruct Q {};",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e___device__", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n__device__\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_alignas", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\nalignas(8)\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_const", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\nconst\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_externC", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\nextern \"C\"\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_inline", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\ninline\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_maybe_unused", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n[[maybe_unused]]\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_static", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\nstatic\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_templateclassT", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\ntemplate <class T>\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_typedef", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\ntypedef\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 e_volatile", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\nvolatile\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 i_hcos", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hcos(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hcos(x[1])); s = __hadd(s, hcos(x[2])); s = __hadd(s, hcos(x[3])); s = __hadd(s, hcos(x[4])); s = __hadd(s, hcos(x[5])); s = __hadd(s, hcos(x[6])); s = __hadd(s, hcos(x[7])); s = __hadd(s, hcos(x[8])); s = __hadd(s, hcos(x[9])); s = __hadd(s, hcos(x[10])); s = __hadd(s, hcos(x[11])); s = __hadd(s, hcos(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2cos(x[1])); s = __hadd2(s, h2cos(x[2])); s = __hadd2(s, h2cos(x[3])); s = __hadd2(s, h2cos(x[4])); s = __hadd2(s, h2cos(x[5])); s = __hadd2(s, h2cos(x[6])); s = __hadd2(s, h2cos(x[7])); s = __hadd2(s, h2cos(x[8])); s = __hadd2(s, h2cos(x[9])); s = __hadd2(s, h2cos(x[10])); s = __hadd2(s, h2cos(x[11])); s = __hadd2(s, h2cos(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_hexp", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hexp(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hexp(x[1])); s = __hadd(s, hexp(x[2])); s = __hadd(s, hexp(x[3])); s = __hadd(s, hexp(x[4])); s = __hadd(s, hexp(x[5])); s = __hadd(s, hexp(x[6])); s = __hadd(s, hexp(x[7])); s = __hadd(s, hexp(x[8])); s = __hadd(s, hexp(x[9])); s = __hadd(s, hexp(x[10])); s = __hadd(s, hexp(x[11])); s = __hadd(s, hexp(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2exp(x[1])); s = __hadd2(s, h2exp(x[2])); s = __hadd2(s, h2exp(x[3])); s = __hadd2(s, h2exp(x[4])); s = __hadd2(s, h2exp(x[5])); s = __hadd2(s, h2exp(x[6])); s = __hadd2(s, h2exp(x[7])); s = __hadd2(s, h2exp(x[8])); s = __hadd2(s, h2exp(x[9])); s = __hadd2(s, h2exp(x[10])); s = __hadd2(s, h2exp(x[11])); s = __hadd2(s, h2exp(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_hexp10", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hexp10(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hexp10(x[1])); s = __hadd(s, hexp10(x[2])); s = __hadd(s, hexp10(x[3])); s = __hadd(s, hexp10(x[4])); s = __hadd(s, hexp10(x[5])); s = __hadd(s, hexp10(x[6])); s = __hadd(s, hexp10(x[7])); s = __hadd(s, hexp10(x[8])); s = __hadd(s, hexp10(x[9])); s = __hadd(s, hexp10(x[10])); s = __hadd(s, hexp10(x[11])); s = __hadd(s, hexp10(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2exp10(x[1])); s = __hadd2(s, h2exp10(x[2])); s = __hadd2(s, h2exp10(x[3])); s = __hadd2(s, h2exp10(x[4])); s = __hadd2(s, h2exp10(x[5])); s = __hadd2(s, h2exp10(x[6])); s = __hadd2(s, h2exp10(x[7])); s = __hadd2(s, h2exp10(x[8])); s = __hadd2(s, h2exp10(x[9])); s = __hadd2(s, h2exp10(x[10])); s = __hadd2(s, h2exp10(x[11])); s = __hadd2(s, h2exp10(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_hlog", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hlog(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hlog(x[1])); s = __hadd(s, hlog(x[2])); s = __hadd(s, hlog(x[3])); s = __hadd(s, hlog(x[4])); s = __hadd(s, hlog(x[5])); s = __hadd(s, hlog(x[6])); s = __hadd(s, hlog(x[7])); s = __hadd(s, hlog(x[8])); s = __hadd(s, hlog(x[9])); s = __hadd(s, hlog(x[10])); s = __hadd(s, hlog(x[11])); s = __hadd(s, hlog(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2log(x[1])); s = __hadd2(s, h2log(x[2])); s = __hadd2(s, h2log(x[3])); s = __hadd2(s, h2log(x[4])); s = __hadd2(s, h2log(x[5])); s = __hadd2(s, h2log(x[6])); s = __hadd2(s, h2log(x[7])); s = __hadd2(s, h2log(x[8])); s = __hadd2(s, h2log(x[9])); s = __hadd2(s, h2log(x[10])); s = __hadd2(s, h2log(x[11])); s = __hadd2(s, h2log(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_hlog10", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hlog10(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hlog10(x[1])); s = __hadd(s, hlog10(x[2])); s = __hadd(s, hlog10(x[3])); s = __hadd(s, hlog10(x[4])); s = __hadd(s, hlog10(x[5])); s = __hadd(s, hlog10(x[6])); s = __hadd(s, hlog10(x[7])); s = __hadd(s, hlog10(x[8])); s = __hadd(s, hlog10(x[9])); s = __hadd(s, hlog10(x[10])); s = __hadd(s, hlog10(x[11])); s = __hadd(s, hlog10(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2log10(x[1])); s = __hadd2(s, h2log10(x[2])); s = __hadd2(s, h2log10(x[3])); s = __hadd2(s, h2log10(x[4])); s = __hadd2(s, h2log10(x[5])); s = __hadd2(s, h2log10(x[6])); s = __hadd2(s, h2log10(x[7])); s = __hadd2(s, h2log10(x[8])); s = __hadd2(s, h2log10(x[9])); s = __hadd2(s, h2log10(x[10])); s = __hadd2(s, h2log10(x[11])); s = __hadd2(s, h2log10(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_hlog2", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hlog2(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hlog2(x[1])); s = __hadd(s, hlog2(x[2])); s = __hadd(s, hlog2(x[3])); s = __hadd(s, hlog2(x[4])); s = __hadd(s, hlog2(x[5])); s = __hadd(s, hlog2(x[6])); s = __hadd(s, hlog2(x[7])); s = __hadd(s, hlog2(x[8])); s = __hadd(s, hlog2(x[9])); s = __hadd(s, hlog2(x[10])); s = __hadd(s, hlog2(x[11])); s = __hadd(s, hlog2(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2log2(x[1])); s = __hadd2(s, h2log2(x[2])); s = __hadd2(s, h2log2(x[3])); s = __hadd2(s, h2log2(x[4])); s = __hadd2(s, h2log2(x[5])); s = __hadd2(s, h2log2(x[6])); s = __hadd2(s, h2log2(x[7])); s = __hadd2(s, h2log2(x[8])); s = __hadd2(s, h2log2(x[9])); s = __hadd2(s, h2log2(x[10])); s = __hadd2(s, h2log2(x[11])); s = __hadd2(s, h2log2(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_hsin", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = hsin(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, hsin(x[1])); s = __hadd(s, hsin(x[2])); s = __hadd(s, hsin(x[3])); s = __hadd(s, hsin(x[4])); s = __hadd(s, hsin(x[5])); s = __hadd(s, hsin(x[6])); s = __hadd(s, hsin(x[7])); s = __hadd(s, hsin(x[8])); s = __hadd(s, hsin(x[9])); s = __hadd(s, hsin(x[10])); s = __hadd(s, hsin(x[11])); s = __hadd(s, hsin(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2sin(x[1])); s = __hadd2(s, h2sin(x[2])); s = __hadd2(s, h2sin(x[3])); s = __hadd2(s, h2sin(x[4])); s = __hadd2(s, h2sin(x[5])); s = __hadd2(s, h2sin(x[6])); s = __hadd2(s, h2sin(x[7])); s = __hadd2(s, h2sin(x[8])); s = __hadd2(s, h2sin(x[9])); s = __hadd2(s, h2sin(x[10])); s = __hadd2(s, h2sin(x[11])); s = __hadd2(s, h2sin(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 i_htanh", (const char *const[]){ "#include <cuda_fp16.h>\nextern \"C\" __global__ void ka(__half *x) { x[0] = htanh(x[1]); }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kb(__half *x) { __half s = x[0]; s = __hadd(s, htanh(x[1])); s = __hadd(s, htanh(x[2])); s = __hadd(s, htanh(x[3])); s = __hadd(s, htanh(x[4])); s = __hadd(s, htanh(x[5])); s = __hadd(s, htanh(x[6])); s = __hadd(s, htanh(x[7])); s = __hadd(s, htanh(x[8])); s = __hadd(s, htanh(x[9])); s = __hadd(s, htanh(x[10])); s = __hadd(s, htanh(x[11])); s = __hadd(s, htanh(x[12])); x[0] = s; }\n",
                                     "#include <cuda_fp16.h>\nextern \"C\" __global__ void kc(__half2 *x) { __half2 s = x[0]; s = __hadd2(s, h2tanh(x[1])); s = __hadd2(s, h2tanh(x[2])); s = __hadd2(s, h2tanh(x[3])); s = __hadd2(s, h2tanh(x[4])); s = __hadd2(s, h2tanh(x[5])); s = __hadd2(s, h2tanh(x[6])); s = __hadd2(s, h2tanh(x[7])); s = __hadd2(s, h2tanh(x[8])); s = __hadd2(s, h2tanh(x[9])); s = __hadd2(s, h2tanh(x[10])); s = __hadd2(s, h2tanh(x[11])); s = __hadd2(s, h2tanh(x[12])); x[0] = s; }\n", NULL }, "???");
        group("review 2 p1", (const char *const[]){ "static __device__ float (expf);\nextern \"C\" __global__ void ka(float *x) { x[0] = expf; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 p2", (const char *const[]){ "extern \"C++\" { __device__ float sinf(int v) { __shared__ float s[256]; s[threadIdx.x] = v; __syncthreads(); return s[(threadIdx.x + 1) % 256]; } }\nextern \"C\" __global__ void ka(float *x) { x[0] = sinf(x[1]); }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 p3", (const char *const[]){ "#define S_(a) #a\n#define S(a) S_(a)\nextern \"C\" __global__ void ka(float *x) { __shared__ float buf[sizeof(S(ka))]; buf[threadIdx.x % sizeof(S(ka))] = x[0]; __syncthreads(); x[1] = buf[(threadIdx.x + 1) % sizeof(S(ka))]; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 p4", (const char *const[]){ "__device__ constexpr int len(const char *s) { return *s ? 1 + len(s + 1) : 0; }\nextern \"C\" __global__ void ka(float *x) { __shared__ float buf[len(__builtin_FILE())]; buf[threadIdx.x % 7] = x[0]; __syncthreads(); x[1] = buf[(threadIdx.x + 1) % 7]; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 p5", (const char *const[]){ "void main() {}\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 p6", (const char *const[]){ "template <class U> __device__ float h(U) { return 1.0f; }\ntemplate <class T> __device__ float g(T t) { return h(t); }\n__device__ float h(float4 v) { __shared__ float s[512]; s[threadIdx.x] = v.x; __syncthreads(); return s[(threadIdx.x + 1) % 512]; }\nextern \"C\" __global__ void ka(float4 *x, float *y) { y[0] = g(x[0]); }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 w1", (const char *const[]){ "extern \"C\" __global__ void ka(double *x) { long double v = x[1]; x[0] = (double)(v * 2); }\n",
                                     "extern \"C\" __global__ void kb(double *x) { long double v = x[1]; x[0] = (double)(v * 2); }\n", NULL }, "??");
        group("review 2 w2", (const char *const[]){ "extern \"C\" __global__ void ka(double4 *x) { double4 v = x[1]; x[0] = v; }\n",
                                     "extern \"C\" __global__ void kb(double4 *x) { double4 v = x[1]; x[0] = v; }\n", NULL }, "??");
        group("review 2 w3", (const char *const[]){ "static __device__ int unused_helper(int a) { return a + 1; }\nextern \"C\" __global__ void ka(float *x) { int q = 3; x[0] = 1.0f; }\n",
                                     "static __device__ int unused_helper(int a) { return a + 1; }\nextern \"C\" __global__ void kb(float *x) { int q = 3; x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 w3b", (const char *const[]){ "static __device__ int unused_helper(int a) { return a + 1; }\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 w3c", (const char *const[]){ "namespace { __device__ int unused_helper(int a) { return a + 1; } }\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = 1.0f; }\n", NULL }, "??");
        group("review 2 w4", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { x[0] = __shfl(x[1], 0); }\n",
                                     "extern \"C\" __global__ void kb(float *x) { x[0] = __shfl(x[1], 0); }\n", NULL }, "??");
        group("review 2 w5", (const char *const[]){ "__device__ __managed__ int mv;\nextern \"C\" __global__ void ka(float *x) { x[0] = mv; }\n",
                                     "__device__ __managed__ int mv;\nextern \"C\" __global__ void kb(float *x) { x[0] = mv; }\n", NULL }, "??");
        group("review 2 w6", (const char *const[]){ "extern \"C\" __global__ void __launch_bounds__(1024, 8) ka(float *x) { double s = 0; for (int i = 0; i < 64; i++) s += sin((double)x[i] * i); x[0] = s; }\n",
                                     "extern \"C\" __global__ void __launch_bounds__(1024, 8) kb(float *x) { double s = 0; for (int i = 0; i < 64; i++) s += sin((double)x[i] * i); x[0] = s; }\n", NULL }, "??");
        group("review 2 w7", (const char *const[]){ "extern \"C\" __global__ void ka(float *x) { int a[4]; x[0] = a[5]; #warning hi\n}\n",
                                     "extern \"C\" __global__ void kb(float *x) { int a[4]; x[0] = a[5]; #warning hi\n}\n", NULL }, "??");
        group("review 2 x1", (const char *const[]){ "#include <array>\n#define static_assert(...)\nextern \"C\" __global__ void ka(float *x) { x[0] = 1.0f; }\n_LIBCUDACXX_END_NAMESPACE_RANGES_ABI\nextern \"C++\" {\n__device__ float sqrtf(double v) { __shared__ float s[1000]; s[threadIdx.x] = (float)v; __syncthreads(); return s[(threadIdx.x + 1) % 1000]; }\n}\n_LIBCUDACXX_BEGIN_NAMESPACE_RANGES_ABI\n",
                                     "#include <array>\nextern \"C\" __global__ void kb(float *x) { x[0] = sqrtf(x[1] * 2.0); }\n", NULL }, "??");
        {
                /* a member with more kernels than the CUBIN reader takes: its own internal result alone */
                size_t cap = 64 << 10, len = 0;
                char *many = malloc(cap);
                CHECK(many != NULL);
                len += (size_t)snprintf(many, cap, "template <int N> __global__ void kk(float *x) { x[0] = N; }\n");
                for (int i = 0; i < 1030 && len + 64 < cap; i++)
                        len += (size_t)snprintf(many + len, cap - len, "template __global__ void kk<%d>(float *);\n", i);
                group("more than 1024 kernels in one member", (const char *const[]){ SCALE(1), SCALE(2), many, NULL }, "mm.");
                free(many);
        }
        group("one member only", (const char *const[]){ SCALE(1), NULL }, ".");
        group("a shared buffer and a constant table",
              (const char *const[]){ "__constant__ float w[4] = {1, 2, 3, 4};\nextern \"C\" __global__ void k(float *x) { __shared__ float s[32]; s[threadIdx.x] = w[threadIdx.x & 3]; __syncthreads(); x[threadIdx.x] = s[31 - threadIdx.x]; }\n",
                                     "__constant__ float w[4] = {4, 3, 2, 1};\nextern \"C\" __global__ void k(float *x) { x[0] = w[1]; }\n",
                                     NULL }, "mm");

        corpus();

        compile_close(comp);
        if (failures)
                fprintf(stderr, "test-group: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
