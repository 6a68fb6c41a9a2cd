/*
 * stdshim - see stdshim.h. The shim texts come from worker/compile/stdshim/ through
 * tools/bin2c (kevald_stdshim[], in the order meson lists them); the
 * host-only names are below, with what to say about each.
 */
#include "worker/compile/stdshim.h"

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

/* The macros kevald_prelude.h defines, directly or through the shims it includes. */
#define PRELUDE_MACROS_MAX 128
static struct {
        const char *p; /* into a shim's text */
        size_t len;
} prelude_macros[PRELUDE_MACROS_MAX];
static size_t n_prelude_macros;

/* Shims whose header name has a folder (bin2c names a file by its base name). */
static const struct {
        const char *file;
        const char *name;
} folders[] = {
        { "cub.cuh", "cub/cub.cuh" },
};

static bool is_ident(char ch)
{
        return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
}

static const char *find_text(const char *name, size_t len)
{
        for (size_t i = 0; i < n_shims; i++)
                if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
                        return texts[i];
        return NULL;
}

/*
 * Note every "#define NAME" of shim @name, and of the shims its
 * "#include <...>" lines name, into prelude_macros[]. The shims are ours:
 * one directive a line, no continuations.
 */
static void collect_macros(const char *name, int depth)
{
        const char *t = find_text(name, strlen(name)), *p, *e;

        if (!t || depth > 4)
                return;
        for (p = t; *p; p = *e ? e + 1 : e) {
                e = strchr(p, '\n');
                if (!e)
                        e = p + strlen(p);
                if (strncmp(p, "#define ", 8) == 0) {
                        const char *m = p + 8;
                        size_t n = 0;
                        while (is_ident(m[n]))
                                n++;
                        if (n > 0 && n_prelude_macros < PRELUDE_MACROS_MAX) {
                                prelude_macros[n_prelude_macros].p = m;
                                prelude_macros[n_prelude_macros++].len = n;
                        }
                } else if (strncmp(p, "#include <", 10) == 0) {
                        const char *h = p + 10, *close = memchr(h, '>', (size_t)(e - h));
                        char inc[64];
                        if (close && (size_t)(close - h) < sizeof(inc)) {
                                memcpy(inc, h, (size_t)(close - h));
                                inc[close - h] = '\0';
                                collect_macros(inc, depth + 1);
                        }
                }
        }
}

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
        collect_macros(STDSHIM_PRELUDE, 0);
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

/**
 * stdshim_prelude_macro() - does kevald_prelude.h define the macro @name?
 * @name, @len: an identifier (not NUL-terminated); borrowed
 *
 * A source that defines one of them itself redefines it (NVRTC warns).
 *
 * Return: true or false.
 */
bool stdshim_prelude_macro(const char *name, size_t len)
{
        load();
        for (size_t i = 0; i < n_prelude_macros; i++)
                if (prelude_macros[i].len == len && memcmp(prelude_macros[i].p, name, len) == 0)
                        return true;
        return false;
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
