/*
 * fence_report - see fence_report.h. The CUDA error a violation is named
 * by is the one the access would have raised had it run: an address in no
 * range CUDA_ERROR_ILLEGAL_ADDRESS, a misaligned one
 * CUDA_ERROR_MISALIGNED_ADDRESS, a trap CUDA_ERROR_LAUNCH_FAILED, a failed
 * assert CUDA_ERROR_ASSERT. The buffer named is the one whose range lies
 * nearest the address, within NEAR_BYTES; farther off,
 * the address is "in no buffer of this job".
 */
#include "worker/gpu/fence_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define NEAR_BYTES (64ull << 20)

/** fence_record_decode() - the record's words (fence_abi.h) as a FenceRecord. */
void fence_record_decode(const uint64_t words[FENCE_REC_WORDS], FenceRecord *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->site = words[0];
        ret->addr = words[1];
        /* six u32 from byte 16 on, little-endian: tid.x, tid.y, tid.z, ctaid.x, ctaid.y, ctaid.z */
        ret->tid[0] = (uint32_t)words[2];
        ret->tid[1] = (uint32_t)(words[2] >> 32);
        ret->tid[2] = (uint32_t)words[3];
        ret->ctaid[0] = (uint32_t)(words[3] >> 32);
        ret->ctaid[1] = (uint32_t)words[4];
        ret->ctaid[2] = (uint32_t)(words[4] >> 32);
}

/** fence_error_name() - the CUDA error the violation of @site prevented; static storage. */
const char *fence_error_name(uint64_t site)
{
        switch (fence_site_kind(site)) {
        case FENCE_KIND_TRAP:
                return "CUDA_ERROR_LAUNCH_FAILED";
        case FENCE_KIND_ASSERT:
                return "CUDA_ERROR_ASSERT";
        case FENCE_KIND_HANG:
                return NULL; /* a timeout, not a CUDA error */
        default:
                return fence_site_misaligned(site) ? "CUDA_ERROR_MISALIGNED_ADDRESS" : "CUDA_ERROR_ILLEGAL_ADDRESS";
        }
}

static const char *verb(unsigned kind)
{
        switch (kind) {
        case FENCE_KIND_LOAD:
                return "read";
        case FENCE_KIND_STORE:
                return "wrote";
        case FENCE_KIND_ATOMIC:
                return "updated (atomic)";
        case FENCE_KIND_COPY:
                return "copied (cp.async) from";
        default:
                return "accessed";
        }
}

static const char *access_name(unsigned kind)
{
        static const char *const n[] = { "?", "load", "store", "atomic", "async_copy", "trap", "assert", "loop" };
        return kind < sizeof(n) / sizeof(n[0]) ? n[kind] : "?";
}

/* Distance from @a to the allowed range of @b (0 inside). */
static uint64_t distance(uint64_t a, const FenceBuffer *b)
{
        uint64_t lo = b->ptr, hi = b->ptr + b->bytes;

        if (a < lo)
                return lo - a;
        if (a >= hi)
                return a - hi + 1;
        return 0;
}

static const char *plural(int64_t n)
{
        return n == 1 || n == -1 ? "" : "s";
}

/**
 * fence_report() - the error object and message of a violation
 * @rec:         the decoded record (rec->site != 0); borrowed
 * @bufs:        the ranges the candidate was allowed; borrowed
 * @n:           how many
 * @kernel:      the kernel launched; borrowed
 * @function:    the function the site is in, when it is not @kernel (a
 *               device function), or NULL; borrowed
 * @source_file: "kernel.cu" or "kernel.ptx", what a site's line is of; borrowed
 * @msg:         the message, "kernel 'k' wrote y[1024] ..."
 * @msglen:      its size
 *
 * Return: a new object with name, call, sticky (false), fenced (true),
 * access, bytes, address, buffer, index, offset, thread, block, line, file,
 * function; NULL when out of memory.
 */
json_t *fence_report(const FenceRecord *rec, const FenceBuffer *bufs, int n, const char *kernel,
                     const char *function, const char *source_file, char *msg, size_t msglen)
{
        unsigned kind = fence_site_kind(rec->site), size = fence_site_size(rec->site);
        unsigned line = fence_site_line(rec->site);
        const FenceBuffer *near = NULL;
        uint64_t best = UINT64_MAX;
        char where[256] = "", what[320], at[160] = "", in_fn[300] = "";
        json_t *o;

        if (line)
                snprintf(at, sizeof(at), " at %s line %u", fence_site_ptx_line(rec->site) ? "kernel.ptx" : source_file,
                         line);
        if (function && *function && strcmp(function, kernel) != 0)
                snprintf(in_fn, sizeof(in_fn), " in function '%s'", function);
        o = json_pack("{s:s?, s:s, s:b, s:b, s:s}", "name", fence_error_name(rec->site), "call", "fenced launch",
                      "sticky", 0, "fenced", 1, "access", access_name(kind));
        if (!o)
                return NULL;
        json_object_set_new(o, "thread", json_pack("[I, I, I]", (json_int_t)rec->tid[0], (json_int_t)rec->tid[1],
                                                   (json_int_t)rec->tid[2]));
        json_object_set_new(o, "block", json_pack("[I, I, I]", (json_int_t)rec->ctaid[0], (json_int_t)rec->ctaid[1],
                                                  (json_int_t)rec->ctaid[2]));
        json_object_set_new(o, "line", line ? json_integer(line) : json_null());
        json_object_set_new(o, "file", line ? json_string(fence_site_ptx_line(rec->site) ? "kernel.ptx" : source_file)
                                            : json_null());
        json_object_set_new(o, "function", function && *function ? json_string(function) : json_null());
        if (kind == FENCE_KIND_HANG) {
                json_object_set_new(o, "ran_ms", json_real((double)(rec->addr / 1000) / 1000.0));
                snprintf(msg, msglen, "kernel '%s'%s was still running %.1f ms after its thread (%u,%u,%u) of block "
                         "(%u,%u,%u) started, in a loop%s: it hangs; the thread was stopped and the context kept "
                         "(fenced build)",
                         kernel, in_fn, (double)rec->addr / 1e6, rec->tid[0], rec->tid[1], rec->tid[2], rec->ctaid[0],
                         rec->ctaid[1], rec->ctaid[2], at);
                return o;
        }
        if (kind == FENCE_KIND_TRAP || kind == FENCE_KIND_ASSERT) {
                snprintf(msg, msglen, "kernel '%s'%s %s%s, thread (%u,%u,%u) of block (%u,%u,%u); the thread was "
                         "stopped and the context kept (fenced build)",
                         kernel, in_fn, kind == FENCE_KIND_TRAP ? "executed trap" : "failed an assertion", at,
                         rec->tid[0], rec->tid[1], rec->tid[2], rec->ctaid[0], rec->ctaid[1], rec->ctaid[2]);
                return o;
        }
        for (int i = 0; i < n; i++) {
                uint64_t d = distance(rec->addr, &bufs[i]);
                if (d < best) {
                        best = d;
                        near = &bufs[i];
                }
        }
        json_object_set_new(o, "bytes", json_integer(size));
        {
                char hex[24];
                snprintf(hex, sizeof(hex), "0x%" PRIx64, rec->addr);
                json_object_set_new(o, "address", json_string(hex));
        }
        if (near && (best == 0 || best <= NEAR_BYTES)) {
                int64_t off = (int64_t)(rec->addr - near->ptr);
                unsigned elem = near->is_global || !near->elem ? 1 : near->elem;
                int64_t idx = off >= 0 ? off / (int64_t)elem : -((-off + (int64_t)elem - 1) / (int64_t)elem);
                int64_t count = (int64_t)(near->bytes / elem);
                char name[96];
                if (near->is_global) /* a data section of the module: bytes, not elements */
                        snprintf(name, sizeof(name), "the module's __device__ data (%s) at byte", near->name);
                else
                        snprintf(name, sizeof(name), "%s", near->name);
                json_object_set_new(o, "buffer", json_string(near->name));
                json_object_set_new(o, "offset", json_integer(off));
                json_object_set_new(o, "index", json_integer(idx));
                if (fence_site_misaligned(rec->site) && !near->is_global && off % (int64_t)elem == 0)
                        snprintf(where, sizeof(where), "%s[%" PRId64 "] through a pointer misaligned for a "
                                 "%u-byte access", name, idx, size);
                else if (fence_site_misaligned(rec->site))
                        snprintf(where, sizeof(where), "%s%s %" PRId64 ", misaligned for a %u-byte access", name,
                                 near->is_global ? "" : " at byte offset", off, size);
                else if (idx >= count)
                        snprintf(where, sizeof(where), "%s%s%" PRId64 "%s, %" PRId64 " %s%s past its end (%" PRId64
                                 " %s)",
                                 name, near->is_global ? " " : "[", idx, near->is_global ? "" : "]", idx - count + 1,
                                 near->is_global ? "byte" : "element", plural(idx - count + 1), count,
                                 near->is_global ? "bytes" : "elements");
                else if (idx < 0)
                        snprintf(where, sizeof(where), "%s%s%" PRId64 "%s, %" PRId64 " %s%s before its start", name,
                                 near->is_global ? " " : "[", idx, near->is_global ? "" : "]", -idx,
                                 near->is_global ? "byte" : "element", plural(-idx));
                else if ((uint64_t)off + size > near->bytes) /* starts inside, runs past the end */
                        snprintf(where, sizeof(where), "%s%s%" PRId64 "%s, an access of %u bytes running past its "
                                 "end", name, near->is_global ? " " : "[", idx, near->is_global ? "" : "]", size);
                else /* inside: the table did not hold this buffer */
                        snprintf(where, sizeof(where), "%s%s%" PRId64 "%s (not in the allocation table)", name,
                                 near->is_global ? " " : "[", idx, near->is_global ? "" : "]");
        } else {
                json_object_set_new(o, "buffer", json_null());
                json_object_set_new(o, "offset", json_null());
                json_object_set_new(o, "index", json_null());
                snprintf(where, sizeof(where), "address 0x%" PRIx64 ", which is in no buffer of this job%s", rec->addr,
                         fence_site_misaligned(rec->site) ? " and misaligned" : "");
        }
        snprintf(what, sizeof(what), "%s %s", verb(kind), where);
        snprintf(msg, msglen, "kernel '%s'%s %s%s, thread (%u,%u,%u) of block (%u,%u,%u); the access was stopped "
                 "before it ran and the context kept (fenced build)",
                 kernel, in_fn, what, at, rec->tid[0], rec->tid[1], rec->tid[2], rec->ctaid[0], rec->ctaid[1],
                 rec->ctaid[2]);
        return o;
}
