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
                if (prefix) {
                        /* the CUBIN holds the member's kernels under its prefix */
                        CHECK(outs[i].cubin && outs[i].cubin_len > 0);
                        CHECK(json_array_size(json_object_get(outs[i].result, "kernels")) > 0);
                }
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

        compile_close(comp);
        if (failures)
                fprintf(stderr, "test-group: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
