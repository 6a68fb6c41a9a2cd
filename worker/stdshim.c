/*
 * stdshim - see stdshim.h. The shim texts come from worker/stdshim/ through
 * tools/bin2c (kevald_stdshim[], in the order meson lists them); the
 * host-only names are below, with what to say about each.
 */
#include "worker/stdshim.h"

#include <stdbool.h>
#include <string.h>

/* tools/bin2c output (stdshim_data.c). */
extern const struct {
        const char *name;
        const unsigned char *data;
        unsigned long len;
} kevald_stdshim[];
extern const unsigned long kevald_stdshim_count;

static const char *names[STDSHIM_MAX_NAMES];
static const char *texts[STDSHIM_MAX_NAMES];
static size_t n_shims;

/* Shims whose header name has a folder (bin2c names a file by its base name). */
static const struct {
        const char *file;
        const char *name;
} folders[] = {
        { "cub.cuh", "cub/cub.cuh" },
};

static void load(void)
{
        if (n_shims > 0)
                return;
        for (unsigned long i = 0; i < kevald_stdshim_count && i < STDSHIM_MAX_NAMES; i++) {
                names[i] = kevald_stdshim[i].name;
                texts[i] = (const char *)kevald_stdshim[i].data;
                for (size_t k = 0; k < sizeof(folders) / sizeof(folders[0]); k++)
                        if (strcmp(names[i], folders[k].file) == 0)
                                names[i] = folders[k].name;
        }
        n_shims = kevald_stdshim_count < STDSHIM_MAX_NAMES ? kevald_stdshim_count : STDSHIM_MAX_NAMES;
}

/** stdshim_count() - how many shims stdshim_names() and stdshim_texts() hold. */
size_t stdshim_count(void)
{
        load();
        return n_shims;
}

/** stdshim_names() - the header names ("cmath", "math.h", ...); static, borrowed. */
const char *const *stdshim_names(void)
{
        load();
        return names;
}

/** stdshim_texts() - the header texts, in the order of stdshim_names(); static, borrowed. */
const char *const *stdshim_texts(void)
{
        load();
        return texts;
}

/**
 * stdshim_find() - the shim for a header name as written in #include
 * @name: "cmath", "stdint.h", ...; borrowed
 *
 * Return: the shim's text (static), or NULL when there is none.
 */
const char *stdshim_find(const char *name)
{
        load();
        for (size_t i = 0; i < n_shims; i++)
                if (strcmp(names[i], name) == 0)
                        return texts[i];
        return NULL;
}

/* Host-only headers: a name, or a folder prefix ending in '/'. */
static const struct {
        const char *name;
        const char *what;
} host_headers[] = {
        { "torch/", "PyTorch" },         { "ATen/", "PyTorch" },      { "c10/", "PyTorch" },
        { "pybind11/", "pybind11" },     { "Python.h", "Python" },
        { "cublas_v2.h", "cuBLAS" },     { "cublas.h", "cuBLAS" },    { "cublasLt.h", "cuBLAS" },
        { "cudnn.h", "cuDNN" },          { "curand.h", "the cuRAND host API" },
        { "iostream", "C++ I/O" },       { "fstream", "C++ I/O" },    { "sstream", "C++ I/O" },
        { "iomanip", "C++ I/O" },        { "vector", "std::vector" }, { "string", "std::string" },
        { "map", "std::map" },           { "unordered_map", "std::unordered_map" },
        { "set", "std::set" },           { "memory", "std::unique_ptr and std::shared_ptr" },
        { "thread", "std::thread" },     { "chrono", "std::chrono" }, { "random", "<random>" },
        { "stdexcept", "C++ exceptions" }, { "exception", "C++ exceptions" },
};

/**
 * stdshim_host_header() - is @name a header that only host code uses?
 * @name: a header name as written in #include; borrowed
 *
 * Return: what it is for ("PyTorch", "std::vector", ...; static), or NULL.
 */
const char *stdshim_host_header(const char *name)
{
        for (size_t i = 0; i < sizeof(host_headers) / sizeof(host_headers[0]); i++) {
                const char *h = host_headers[i].name;
                size_t n = strlen(h);
                bool prefix = h[n - 1] == '/';
                if (prefix ? strncmp(name, h, n) == 0 : strcmp(name, h) == 0)
                        return host_headers[i].what;
        }
        return NULL;
}
