/*
 * Unit tests for the CUBIN reader (worker/cubin.c), on CUBINs that real
 * NVRTC builds here from kernels whose parameter layout is known from the
 * C++ ABI: offsets and sizes, parameter-less kernels, by-value structs,
 * __launch_bounds__, stack frames and register counts. Then the hostile
 * side: a kernel's attribute section that claims no bytes in the file is
 * refused, and every truncation and a few thousand random corruptions of a
 * real CUBIN must be refused or read without a crash (ASan/UBSan watch
 * this). The ELF structure's own rules are tested in test-elf.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/compile/compile.h"
#include "worker/cubin.h"
#include "worker/elf.h"
#include "common/testcheck.h"

static const char source[] =
        "struct S { double a; int b; char c[12]; };\n"             /* 24 bytes, align 8 */
        "struct Big { float v[64]; };\n"                           /* 256 bytes */
        "extern \"C\" __global__ void __launch_bounds__(256) k1(float *p, int n, double d, char c, S s)\n"
        "{\n"
        "  __shared__ float sm[64];\n"
        "  int i = threadIdx.x;\n"
        "  sm[i % 64] = p[i] * d + c + s.a + s.b;\n"
        "  __syncthreads();\n"
        "  if (i < n) p[i] = sm[(i + 1) % 64];\n"
        "}\n"
        "extern \"C\" __global__ void noparams() { }\n"
        "__device__ __noinline__ float dev(float x, int n)\n"
        "{ float a[32]; for (int i = 0; i < 32; i++) a[i] = x * i; return a[n & 31]; }\n"
        "extern \"C\" __global__ void __launch_bounds__(128, 2) lb(float *p, int n)\n"
        "{ p[threadIdx.x] = dev(p[0], n); }\n"
        "extern \"C\" __global__ void big(Big b, float *o) { o[threadIdx.x] = b.v[threadIdx.x & 63]; }\n"
        "extern \"C\" __global__ void mixed(char a, short b, long long c, char d, float4 e) {\n"
        "  if (a == 1 && b == 2 && c == 3 && d == 4 && e.x == 5) asm volatile(\"trap;\"); }\n";

static uint64_t rd64le(const uint8_t *p)
{
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

static void check_params(const CubinKernel *k, const unsigned (*want)[2], size_t n)
{
        CHECK(k != NULL);
        if (!k)
                return;
        CHECK(k->n_params == n);
        for (size_t i = 0; i < n && i < k->n_params; i++) {
                if (k->params[i].offset != want[i][0] || k->params[i].size != want[i][1]) {
                        fprintf(stderr, "%s param %zu: offset %u size %u, want %u %u\n", k->name, i,
                                k->params[i].offset, k->params[i].size, want[i][0], want[i][1]);
                        failures++;
                }
        }
}

int main(void)
{
        Compiler *c = NULL;
        CompileJob job = { .language = "cuda", .source = source, .source_len = strlen(source) };
        CompileOutput out = { 0 };
        CubinInfo *info = NULL;
        const CubinKernel *k;
        uint8_t *copy;
        unsigned seed = 12345;

        CHECK(compile_open(getenv("KEVALD_CUDA_HOME"), &c) == 0);
        if (!c)
                return 1;
        CHECK(compile_run(c, &job, &out) == 0);
        if (!out.result || !json_is_true(json_object_get(out.result, "ok")) || !out.cubin) {
                fprintf(stderr, "compile failed: %s\n",
                        out.result ? json_string_value(json_object_get(out.result, "log")) : "?");
                return 1;
        }

        CHECK(cubin_parse(out.cubin, out.cubin_len, &info) == 0);
        if (!info)
                return 1;
        CHECK(info->n_kernels == 5);

        /* float* at 0, int at 8, double at 16 (aligned), char at 24, S (align 8) at 32. */
        k = cubin_find_kernel(info, "k1");
        check_params(k, (const unsigned[][2]){ { 0, 8 }, { 8, 4 }, { 16, 8 }, { 24, 1 }, { 32, 24 } }, 5);
        if (k) {
                CHECK(k->param_bytes == 56);
                CHECK(k->max_threads == 256);
                CHECK(k->registers > 0 && k->registers <= 255);
                CHECK(k->frame_bytes == 0);
                /* 256 bytes of __shared__ plus whatever the toolchain reserves */
                CHECK(k->shared_section >= 256);
        }
        k = cubin_find_kernel(info, "noparams");
        CHECK(k != NULL);
        if (k) {
                CHECK(k->n_params == 0 && k->params == NULL);
                CHECK(k->max_threads == -1); /* no bound: the report says 1024 */
        }
        /* A 32-float local array in a noinline callee: 128 bytes of stack. */
        k = cubin_find_kernel(info, "lb");
        check_params(k, (const unsigned[][2]){ { 0, 8 }, { 8, 4 } }, 2);
        if (k) {
                CHECK(k->max_threads == 128);
                CHECK(k->frame_bytes == 128);
                CHECK(k->stack_bytes == 128);
        }
        k = cubin_find_kernel(info, "big");
        check_params(k, (const unsigned[][2]){ { 0, 256 }, { 256, 8 } }, 2);
        /* char 0, short 2, long long 8, char 16, float4 (align 16) 32 */
        k = cubin_find_kernel(info, "mixed");
        check_params(k, (const unsigned[][2]){ { 0, 1 }, { 2, 2 }, { 8, 8 }, { 16, 1 }, { 32, 16 } }, 5);
        CHECK(cubin_find_kernel(info, "dev") == NULL);
        CHECK(cubin_find_kernel(info, "_Z3devfi") == NULL); /* not an entry */
        cubin_info_free(info);
        info = NULL;

        /* Not CUBINs. */
        CHECK(cubin_parse("", 0, &info) == CUBIN_E_MALFORMED);
        CHECK(cubin_parse("\177ELF hello", 10, &info) == CUBIN_E_MALFORMED);
        copy = malloc(out.cubin_len);
        if (!copy)
                return 1;
        memcpy(copy, out.cubin, out.cubin_len);
        copy[18] = 62; /* EM_X86_64 */
        CHECK(cubin_parse(copy, out.cubin_len, &info) == CUBIN_E_MALFORMED);

        /* .nv.info.k1 turned into a section without bytes at a wild offset: its
         * attributes cannot be read, so the CUBIN is refused (not read from there). */
        memcpy(copy, out.cubin, out.cubin_len);
        {
                ElfImage e = { 0 };
                const ElfSection *s;
                CHECK(elf_open(copy, out.cubin_len, &e) == 0);
                s = e.sections ? elf_find_section(&e, ".nv.info.", "k1") : NULL;
                CHECK(s != NULL);
                if (s) {
                        size_t i = (size_t)(s - e.sections);
                        uint8_t *h = copy + rd64le(copy + 0x28) + i * (copy[0x3a] | copy[0x3b] << 8);
                        h[4] = 8; /* SHT_NOBITS */
                        h[5] = h[6] = h[7] = 0;
                        memset(h + 0x18, 0xff, 8);
                        CHECK(cubin_parse(copy, out.cubin_len, &info) == CUBIN_E_MALFORMED);
                }
                elf_close(&e);
        }

        /* Every truncation: refused or read, never a crash or a read past the end. */
        for (size_t len = 0; len < out.cubin_len; len++) {
                uint8_t *t = malloc(len ? len : 1);
                int r;
                if (!t)
                        return 1;
                memcpy(t, out.cubin, len);
                r = cubin_parse(t, len, &info);
                CHECK(r == 0 || r == CUBIN_E_MALFORMED);
                cubin_info_free(info);
                info = NULL;
                free(t);
        }
        /* Random corruption of 1..8 bytes, 3000 times. */
        for (int iter = 0; iter < 3000; iter++) {
                int r, flips = 1 + (int)(rand_r(&seed) % 8);
                memcpy(copy, out.cubin, out.cubin_len);
                for (int f = 0; f < flips; f++)
                        copy[(size_t)rand_r(&seed) % out.cubin_len] = (uint8_t)rand_r(&seed);
                r = cubin_parse(copy, out.cubin_len, &info);
                CHECK(r == 0 || r == CUBIN_E_MALFORMED);
                if (r == 0)
                        for (size_t i = 0; i < info->n_kernels; i++)
                                CHECK(info->kernels[i].name && info->kernels[i].n_params <= CUBIN_PARAMS_MAX);
                cubin_info_free(info);
                info = NULL;
        }
        free(copy);
        compile_output_clear(&out);
        compile_close(c);
        if (failures)
                fprintf(stderr, "test-cubin: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
