/*
 * test-gpu-elf - listing a CUBIN's __device__ variables (worker/gpu/gpu_elf.h)
 * from a real CUBIN that nvcc built from test-gpu-elf.cu, and robustness on
 * truncated and corrupted images (every prefix, many random byte flips).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/devrng.h"
#include "worker/gpu/gpu_elf.h"
#include "common/testcheck.h"

static const GpuElfGlobal *find(const GpuElfGlobals *g, const char *name)
{
        for (int i = 0; i < g->n_globals; i++)
                if (strcmp(g->globals[i].name, name) == 0)
                        return &g->globals[i];
        return NULL;
}

int main(int argc, char **argv)
{
        unsigned char *img;
        size_t n;
        FILE *f;
        GpuElfGlobals g;
        const GpuElfGlobal *x, *y, *z, *w;
        uint64_t s = 1;

        if (argc != 2) {
                fprintf(stderr, "usage: test-gpu-elf CUBIN\n");
                return 2;
        }
        f = fopen(argv[1], "rb");
        if (!f) {
                perror(argv[1]);
                return 1;
        }
        img = malloc(1 << 24);
        n = fread(img, 1, 1 << 24, f);
        fclose(f);

        CHECK(gpu_elf_globals(img, n, &g) == 0);
        CHECK(g.n_sections == 2 && g.n_globals == 4);
        x = find(&g, "x");
        y = find(&g, "y");
        z = find(&g, "_ZL1z"); /* static: a local, mangled name */
        if (!z)
                z = find(&g, "z");
        w = find(&g, "w");
        CHECK(x && x->size == 4 && y && y->size == 12 && z && z->size == 80 && w && w->size == 100);
        if (x && z) {
                CHECK(strcmp(g.sections[x->section].name, ".nv.global.init") == 0);
                CHECK(strcmp(g.sections[z->section].name, ".nv.global") == 0);
                for (int i = 0; i < g.n_globals; i++)
                        CHECK(g.globals[i].offset + g.globals[i].size <= g.sections[g.globals[i].section].size);
        }
        gpu_elf_globals_clear(&g);

        /* not an ELF: refused */
        CHECK(gpu_elf_globals("FAKE:vadd\n", 10, &g) == GPU_ELF_E_MALFORMED);
        /* every truncation: refused or parsed, never a read out of bounds (ASan) */
        for (size_t len = 0; len < n; len += len < 4096 ? 1 : 61) {
                unsigned char *t = malloc(len ? len : 1);
                memcpy(t, img, len);
                if (gpu_elf_globals(t, len, &g) == 0)
                        gpu_elf_globals_clear(&g);
                free(t);
        }
        /* random corruption of header and tables */
        for (int round = 0; round < 3000; round++) {
                unsigned char *t = malloc(n);
                memcpy(t, img, n);
                for (int k = 0; k < 4; k++) {
                        s = kv_mix64(s);
                        t[(s >> 8) % (round % 2 ? 256 : n)] = (unsigned char)s;
                }
                if (gpu_elf_globals(t, n, &g) == 0)
                        gpu_elf_globals_clear(&g);
                free(t);
        }
        free(img);
        if (failures) {
                fprintf(stderr, "test-gpu-elf: %d failure(s)\n", failures);
                return 1;
        }
        printf("test-gpu-elf: ok\n");
        return 0;
}
