/*
 * gpu - the CUDA Driver API as the GPU worker uses it. Only gpu.c (and
 * blas.c) include <cuda.h>; everything else sees the opaque types below.
 *
 * Error model: a failing call returns GPU_E_CUDA and leaves the details in a
 * per-process record (gpu_error_last(): name, message, the API call, and
 * whether the error is sticky). The worker is single-threaded, so one
 * record is enough, like errno. A sticky error (the 7xx family, ECC, an
 * unknown error) poisons the context for good: gpu_is_sticky() stays true
 * and the process must send its RESULT and exit.
 *
 * Waiting: nothing here blocks without a deadline. Work goes onto one
 * non-blocking stream; gpu_stream_wait() and gpu_event_wait() poll
 * cuEventQuery with short sleeps until the event completes, an error
 * appears, or the deadline set with gpu_deadline_set() passes
 * (GPU_E_TIMEOUT: a spinning kernel cannot be stopped, the caller reports
 * and exits).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t GpuPtr;
typedef struct GpuModule GpuModule; /* a CUmodule */
typedef struct GpuKernel GpuKernel; /* a CUfunction */
typedef struct GpuEvent GpuEvent;   /* a CUevent */
typedef struct GpuGraph GpuGraph;   /* an instantiated CUgraphExec */

enum {
        GPU_E_CUDA = 1,    /* a CUDA (or cuBLAS) call failed; see gpu_error_last() */
        GPU_E_TIMEOUT = 2, /* the deadline passed while waiting for the GPU */
        GPU_E_NOT_FOUND = 3, /* no such kernel in the module */
};

typedef struct GpuError {
        int code;           /* CUresult, or cublasStatus_t for where "cublas*" */
        char name[64];      /* "CUDA_ERROR_ILLEGAL_ADDRESS" */
        char message[256];  /* the driver's description */
        char where[64];     /* the API call, e.g. "cuLaunchKernel" */
        bool sticky;
} GpuError;

typedef struct GpuInfo {
        int index;
        char name[256];
        int cc_major, cc_minor;
        char arch[16];          /* "sm_90a" for cc >= 9.0, else "sm_86" */
        int sms;
        uint64_t memory_bytes;
        int l2_bytes;
        int max_threads_per_block;
        int max_threads_per_sm;
        int max_shared_per_block;  /* without opt-in (48 KiB) */
        int max_shared_optin;      /* with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
        int clock_khz;             /* SM clock */
        int mem_clock_khz;
        int bus_width_bits;
        int cuda_driver;           /* cuDriverGetVersion: 13000 */
        char driver[64];           /* from /proc/driver/nvidia/version, "" if unknown */
} GpuInfo;

typedef struct GpuKernelAttrs {
        int registers;
        int shared_static;
        int local;
        int max_threads_per_block;
        int max_dynamic_shared;
} GpuKernelAttrs;

const GpuError *gpu_error_last(void);
void gpu_error_set(int code, const char *name, const char *message, const char *where, bool sticky);
bool gpu_is_sticky(void);
bool gpu_out_of_memory(int r);
bool gpu_result_is_sticky(int cuda_result);

void gpu_driver_version_read(char *buf, size_t len);
int gpu_init(int index, GpuInfo *ret_info);
void *gpu_stream_handle(void);
int gpu_limit_printf_fifo(size_t bytes);

void gpu_deadline_set(int64_t deadline_ns);
int64_t gpu_deadline_get(void);
int64_t gpu_now_ns(void);

int gpu_module_load(const void *image, size_t size, GpuModule **ret_module);
void gpu_module_unload(GpuModule *module);
int gpu_kernel_get(GpuModule *module, const char *name, GpuKernel **ret_kernel);
int gpu_module_global(GpuModule *module, const char *name, GpuPtr *ret_ptr, size_t *ret_bytes);
int gpu_kernel_params(GpuKernel *kernel, size_t max, size_t *ret_sizes, size_t *ret_count);
int gpu_kernel_attrs(GpuKernel *kernel, GpuKernelAttrs *ret_attrs);
int gpu_kernel_set_max_dynamic_shared(GpuKernel *kernel, int bytes);
int gpu_kernel_occupancy(GpuKernel *kernel, int block_threads, size_t dynamic_shared, int *ret_blocks);
int gpu_launch(GpuKernel *kernel, const unsigned grid[3], const unsigned block[3], unsigned shared,
               void **params);

int gpu_capture_begin(void);
int gpu_capture_end(GpuGraph **ret_graph);
int gpu_graph_launch(GpuGraph *graph);
void gpu_graph_destroy(GpuGraph *graph);

int gpu_alloc(size_t bytes, GpuPtr *ret_ptr);
int gpu_free(GpuPtr ptr);
int gpu_host_alloc(size_t bytes, void **ret_ptr);
int gpu_memset8(GpuPtr dst, uint8_t value, size_t bytes);
int gpu_memset32(GpuPtr dst, uint32_t value, size_t words);
int gpu_copy_dtod(GpuPtr dst, GpuPtr src, size_t bytes);
int gpu_copy_dtoh(void *pinned_dst, GpuPtr src, size_t bytes);
int gpu_copy_htod(GpuPtr dst, const void *pinned_src, size_t bytes);
int gpu_mem_info(size_t *ret_free, size_t *ret_total);

int gpu_event_create(GpuEvent **ret_event);
void gpu_event_destroy(GpuEvent *event);
int gpu_event_record(GpuEvent *event);
int gpu_event_wait(GpuEvent *event);
int gpu_event_elapsed_ms(GpuEvent *start, GpuEvent *end, double *ret_ms);
int gpu_stream_wait(void);

void gpu_activity_begin(void);
double gpu_activity_take(void);
