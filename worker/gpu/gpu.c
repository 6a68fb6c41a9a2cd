/*
 * gpu - see gpu.h. This file owns the CUDA context of the worker: the
 * primary context of device KEVALD_GPU_INDEX, one non-blocking stream that
 * every operation goes onto, and an internal event for deadline waits.
 * Every driver call is checked; a failure records the error (name from
 * cuGetErrorName, message from cuGetErrorString, the call's name) and marks
 * the process sticky when the error poisons the context.
 */
#include "worker/gpu/gpu.h"

#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static GpuError last_error;
static bool sticky_seen;
static CUcontext ctx;
static CUstream stream;
static CUevent wait_event;
static int64_t deadline_ns = INT64_MAX;

/*
 * GPU activity: a segment opens at the first enqueue after the stream went
 * idle (an event recorded before it) and closes when a wait observes the
 * stream drained (the waited event is the last thing enqueued); its
 * event-timed length is added to active_ms. So active_ms is the time the
 * GPU had this worker's work in flight: kernels, memsets, copies and the
 * launch gaps between them, not the host's time between segments.
 */
static CUevent seg_start_ev;
static CUevent seg_last;   /* the last event recorded */
static bool seg_open;
static bool capturing; /* between gpu_capture_begin() and _end(): nothing runs, nothing to account */
static bool seg_dirty;     /* work enqueued after seg_last */
static double active_ms;

/**
 * gpu_result_is_sticky() - does this CUresult leave the context unusable?
 * The 7xx family of kernel faults, ECC and NVLink errors, a destroyed or
 * deinitialised context, and CUDA_ERROR_UNKNOWN: after any of these every
 * later call fails, even after a primary-context reset, so the worker exits.
 */
bool gpu_result_is_sticky(int r)
{
        switch (r) {
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_LAUNCH_TIMEOUT:
        case CUDA_ERROR_CONTEXT_IS_DESTROYED:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_LAUNCH_FAILED:
        case CUDA_ERROR_TENSOR_MEMORY_LEAK:
        case CUDA_ERROR_ECC_UNCORRECTABLE:
        case CUDA_ERROR_NVLINK_UNCORRECTABLE:
        case CUDA_ERROR_DEINITIALIZED:
        case CUDA_ERROR_DEVICE_UNAVAILABLE:
        case CUDA_ERROR_EXTERNAL_DEVICE:
        case CUDA_ERROR_UNKNOWN:
                return true;
        default:
                return false;
        }
}

/** gpu_error_last() - the last recorded error; borrowed, valid until the next failure. */
const GpuError *gpu_error_last(void)
{
        return &last_error;
}

/** gpu_is_sticky() - true once any sticky error was seen in this process. */
bool gpu_is_sticky(void)
{
        return sticky_seen;
}

/** gpu_out_of_memory() - @r is GPU_E_CUDA for CUDA_ERROR_OUT_OF_MEMORY (gpu_error_last()). */
bool gpu_out_of_memory(int r)
{
        return r == GPU_E_CUDA && strcmp(gpu_error_last()->name, "CUDA_ERROR_OUT_OF_MEMORY") == 0;
}

/**
 * gpu_error_set() - record an error (used by blas.c for cuBLAS statuses)
 * @code, @name, @message, @where: copied (truncated to fit)
 * @sticky: whether the context is lost
 */
void gpu_error_set(int code, const char *name, const char *message, const char *where, bool sticky)
{
        last_error.code = code;
        snprintf(last_error.name, sizeof(last_error.name), "%s", name ? name : "");
        snprintf(last_error.message, sizeof(last_error.message), "%s", message ? message : "");
        snprintf(last_error.where, sizeof(last_error.where), "%s", where ? where : "");
        last_error.sticky = sticky;
        if (sticky)
                sticky_seen = true;
}

/* Record @r from @where and return GPU_E_CUDA, or 0 for CUDA_SUCCESS. */
static int check(CUresult r, const char *where)
{
        const char *name = NULL, *msg = NULL;

        if (r == CUDA_SUCCESS)
                return 0;
        if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
                name = "CUDA_ERROR_UNRECOGNIZED";
        if (cuGetErrorString(r, &msg) != CUDA_SUCCESS || !msg)
                msg = "unrecognized CUDA error";
        /* @where may be a whole call expression (CHECK()): keep the function name */
        gpu_error_set((int)r, name, msg, where, gpu_result_is_sticky((int)r));
        last_error.where[strcspn(last_error.where, "(")] = '\0';
        return GPU_E_CUDA;
}

#define CHECK(call) check((call), #call)

/** gpu_now_ns() - CLOCK_MONOTONIC in nanoseconds. */
int64_t gpu_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/** gpu_deadline_set() - every later wait gives up at @ns (CLOCK_MONOTONIC; INT64_MAX: none). */
void gpu_deadline_set(int64_t ns)
{
        deadline_ns = ns;
}

int64_t gpu_deadline_get(void)
{
        return deadline_ns;
}

/**
 * gpu_driver_version_read() - the kernel module's version from
 * /proc/driver/nvidia/version ("580.95.05"); call before the sandbox hides
 * /proc. @buf gets "" when the file is missing or unreadable.
 */
void gpu_driver_version_read(char *buf, size_t len)
{
        char line[512];
        FILE *f;

        if (len == 0)
                return;
        buf[0] = '\0';
        f = fopen("/proc/driver/nvidia/version", "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue ..." */
                char *p = strstr(line, "Kernel Module");
                char *q;
                if (!p)
                        continue;
                p += strlen("Kernel Module");
                while (*p == ' ' || *p == '\t')
                        p++;
                if (strncmp(p, "for ", 4) == 0) { /* "Kernel Module for aarch64  580..." */
                        p = strchr(p + 4, ' ');
                        if (!p)
                                break;
                        while (*p == ' ')
                                p++;
                }
                q = p;
                while ((*q >= '0' && *q <= '9') || *q == '.')
                        q++;
                if (q > p)
                        snprintf(buf, len, "%.*s", (int)(q - p), p);
                break;
        }
        fclose(f);
}

static int attr(CUdevice dev, CUdevice_attribute a, int *ret)
{
        return check(cuDeviceGetAttribute(ret, a, dev), "cuDeviceGetAttribute");
}

/**
 * gpu_init() - initialise the driver, make device @index's primary context
 * current, create the stream and the wait event, and describe the device.
 * @ret_info: filled on success (driver left "" for the caller to fill from
 *            gpu_driver_version_read())
 * Return: 0, GPU_E_CUDA.
 */
int gpu_init(int index, GpuInfo *ret_info)
{
        GpuInfo info;
        CUdevice dev;
        size_t total = 0;
        int n = 0, r;

        memset(&info, 0, sizeof(info));
        info.index = index;
        /* One hardware queue: the worker has one stream. Context creation
         * is serialized across the host's processes; with the default 8
         * queues a context took 110 ms alone and 894 ms p50 with 8 created
         * at once on an H100, with 1: 63 and 287 ms (bench/faults/ctxstart.py,
         * BENCHMARKS.md). Set in the environment, the caller's value stays. */
        if (setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0) < 0)
                return -errno;
        if ((r = CHECK(cuInit(0))))
                return r;
        if ((r = CHECK(cuDeviceGetCount(&n))))
                return r;
        if (index < 0 || index >= n) {
                gpu_error_set(CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
                              "KEVALD_GPU_INDEX is not a device of this host", "gpu_init", false);
                return GPU_E_CUDA;
        }
        if ((r = CHECK(cuDeviceGet(&dev, index))) || (r = CHECK(cuDevicePrimaryCtxRetain(&ctx, dev))) ||
            (r = CHECK(cuCtxSetCurrent(ctx))))
                return r;
        if ((r = CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))) ||
            (r = CHECK(cuEventCreate(&wait_event, CU_EVENT_DEFAULT))) ||
            (r = CHECK(cuEventCreate(&seg_start_ev, CU_EVENT_DEFAULT))))
                return r;
        if ((r = CHECK(cuDeviceGetName(info.name, sizeof(info.name) - 1, dev))))
                return r;
        if ((r = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.sms)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info.l2_bytes)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.max_threads_per_block)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &info.max_threads_per_sm)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &info.max_shared_per_block)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.max_shared_optin)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info.clock_khz)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info.mem_clock_khz)) ||
            (r = attr(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &info.bus_width_bits)))
                return r;
        if ((r = CHECK(cuDeviceTotalMem(&total, dev))) || (r = CHECK(cuDriverGetVersion(&info.cuda_driver))))
                return r;
        info.memory_bytes = total;
        /* sm_90a and later: the arch-specific target, so wgmma/tcgen05 compile */
        snprintf(info.arch, sizeof(info.arch), "sm_%d%d%s", info.cc_major, info.cc_minor,
                 info.cc_major >= 9 ? "a" : "");
        *ret_info = info;
        return 0;
}

/** gpu_stream_handle() - the worker's CUstream, for cuBLAS; borrowed. */
void *gpu_stream_handle(void)
{
        return (void *)stream;
}

/** gpu_limit_printf_fifo() - bound the device printf FIFO (before any launch). */
int gpu_limit_printf_fifo(size_t bytes)
{
        return CHECK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, bytes));
}

/**
 * gpu_module_load() - load a CUBIN or fatbin image
 * @image: borrowed, at any alignment (it may lie inside a frame's blob): it
 *         is copied to malloc'd memory, whose alignment suits the driver's
 *         ELF loader, and the driver copies it again
 * @size: its size
 * @ret_module: a new module (gpu_module_unload())
 * Return: 0, -ENOMEM, GPU_E_CUDA (e.g. CUDA_ERROR_INVALID_IMAGE, NO_BINARY_FOR_GPU).
 */
int gpu_module_load(const void *image, size_t size, GpuModule **ret_module)
{
        void *copy = malloc(size ? size : 1);
        CUmodule m;
        int r;

        if (!copy)
                return -ENOMEM;
        memcpy(copy, image, size);
        r = CHECK(cuModuleLoadData(&m, copy));
        free(copy);
        if (r)
                return r;
        *ret_module = (GpuModule *)m;
        return 0;
}

/** gpu_module_unload() - unload; accepts NULL. Errors are recorded, not returned. */
void gpu_module_unload(GpuModule *module)
{
        if (module)
                (void)CHECK(cuModuleUnload((CUmodule)module));
}

/**
 * gpu_kernel_get() - look up an extern "C" or lowered kernel name
 * @ret_kernel: borrowed from the module; valid until it is unloaded
 * Return: 0, GPU_E_NOT_FOUND, GPU_E_CUDA.
 */
int gpu_kernel_get(GpuModule *module, const char *name, GpuKernel **ret_kernel)
{
        CUfunction f;
        CUresult r = cuModuleGetFunction(&f, (CUmodule)module, name);

        if (r == CUDA_ERROR_NOT_FOUND)
                return GPU_E_NOT_FOUND;
        if (check(r, "cuModuleGetFunction"))
                return GPU_E_CUDA;
        *ret_kernel = (GpuKernel *)f;
        return 0;
}

/**
 * gpu_module_global() - address and size of a __device__ variable
 * Return: 0, GPU_E_NOT_FOUND, GPU_E_CUDA.
 */
int gpu_module_global(GpuModule *module, const char *name, GpuPtr *ret_ptr, size_t *ret_bytes)
{
        CUdeviceptr p;
        size_t bytes;
        CUresult r = cuModuleGetGlobal(&p, &bytes, (CUmodule)module, name);

        if (r == CUDA_ERROR_NOT_FOUND)
                return GPU_E_NOT_FOUND;
        if (check(r, "cuModuleGetGlobal"))
                return GPU_E_CUDA;
        *ret_ptr = (GpuPtr)p;
        *ret_bytes = bytes;
        return 0;
}

/**
 * gpu_kernel_params() - the kernel's real parameter list (cuFuncGetParamInfo)
 * @max: room in @ret_sizes; a kernel with more parameters reports max + 1
 * @ret_sizes: the size of each parameter in bytes
 * @ret_count: the number of parameters (capped at @max + 1)
 * Return: 0, GPU_E_CUDA.
 */
int gpu_kernel_params(GpuKernel *kernel, size_t max, size_t *ret_sizes, size_t *ret_count)
{
        size_t i;

        for (i = 0; i <= max; i++) {
                size_t off = 0, size = 0;
                CUresult r = cuFuncGetParamInfo((CUfunction)kernel, i, &off, &size);
                if (r == CUDA_ERROR_INVALID_VALUE)
                        break; /* past the last parameter */
                if (check(r, "cuFuncGetParamInfo"))
                        return GPU_E_CUDA;
                if (i < max)
                        ret_sizes[i] = size;
        }
        *ret_count = i;
        return 0;
}

/** gpu_kernel_attrs() - registers, static shared, local memory, limits. Return: 0, GPU_E_CUDA. */
int gpu_kernel_attrs(GpuKernel *kernel, GpuKernelAttrs *ret_attrs)
{
        CUfunction f = (CUfunction)kernel;
        GpuKernelAttrs a;
        int r;

        if ((r = CHECK(cuFuncGetAttribute(&a.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f))) ||
            (r = CHECK(cuFuncGetAttribute(&a.shared_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f))) ||
            (r = CHECK(cuFuncGetAttribute(&a.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f))) ||
            (r = CHECK(cuFuncGetAttribute(&a.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f))) ||
            (r = CHECK(cuFuncGetAttribute(&a.max_dynamic_shared, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f))))
                return r;
        *ret_attrs = a;
        return 0;
}

/** gpu_kernel_set_max_dynamic_shared() - opt in to more than 48 KiB of dynamic shared memory. */
int gpu_kernel_set_max_dynamic_shared(GpuKernel *kernel, int bytes)
{
        return CHECK(cuFuncSetAttribute((CUfunction)kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        bytes));
}

/** gpu_kernel_occupancy() - resident blocks per SM for this block size. Return: 0, GPU_E_CUDA. */
int gpu_kernel_occupancy(GpuKernel *kernel, int block_threads, size_t dynamic_shared, int *ret_blocks)
{
        int n = 0, r;

        if ((r = CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, (CUfunction)kernel, block_threads,
                                                                   dynamic_shared))))
                return r;
        *ret_blocks = n;
        return 0;
}

/**
 * gpu_activity_begin() - note that work is about to be enqueued on the
 * stream (gpu.c's own enqueues call it; blas.c calls it before cuBLAS).
 */
void gpu_activity_begin(void)
{
        if (capturing)
                return;
        if (!seg_open && stream && cuEventRecord(seg_start_ev, stream) == CUDA_SUCCESS)
                seg_open = true;
        seg_dirty = true;
}

/* A wait saw @event complete: if nothing was enqueued after it, the stream
 * drained there and the open segment ends. */
static void activity_end(CUevent event)
{
        float ms = 0;

        if (!seg_open || event != seg_last || seg_dirty)
                return;
        if (cuEventElapsedTime(&ms, seg_start_ev, event) == CUDA_SUCCESS && ms > 0)
                active_ms += ms;
        seg_open = false;
}

/**
 * gpu_activity_take() - the GPU activity time accumulated since the last
 * call, in ms (see the comment at the top of gpu.c); resets it.
 */
double gpu_activity_take(void)
{
        double v = active_ms;

        active_ms = 0;
        return v;
}

/**
 * gpu_launch() - enqueue one launch on the worker's stream
 * @params: kernelParams, one pointer per parameter; borrowed (the driver
 *          copies the values before returning)
 * Return: 0, GPU_E_CUDA (synchronous launch errors: INVALID_VALUE for a bad
 * configuration, LAUNCH_OUT_OF_RESOURCES, or an earlier sticky error).
 */
int gpu_launch(GpuKernel *kernel, const unsigned grid[3], const unsigned block[3], unsigned shared,
               void **params)
{
        gpu_activity_begin();
        return CHECK(cuLaunchKernel((CUfunction)kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                    shared, stream, params, NULL));
}

/**
 * gpu_capture_begin() - record the launches enqueued from now on into a
 * graph instead of running them (cuStreamBeginCapture on the worker's
 * stream). Only gpu_launch() may be called until gpu_capture_end().
 * Return: 0, GPU_E_CUDA.
 */
int gpu_capture_begin(void)
{
        int r = CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));

        capturing = r == 0;
        return r;
}

/**
 * gpu_capture_end() - end the capture; with @ret_graph, instantiate what was
 * recorded (NULL: discard it, e.g. after a failed launch).
 * Return: 0, GPU_E_CUDA (the capture was invalidated, or instantiation failed).
 */
int gpu_capture_end(GpuGraph **ret_graph)
{
        CUgraph g = NULL;
        CUgraphExec exec = NULL;
        int r;

        capturing = false;
        r = CHECK(cuStreamEndCapture(stream, &g));
        if (r == 0 && ret_graph)
                r = CHECK(cuGraphInstantiate(&exec, g, 0));
        if (g)
                cuGraphDestroy(g);
        if (r == 0 && ret_graph)
                *ret_graph = (GpuGraph *)exec;
        return r;
}

/** gpu_graph_launch() - run an instantiated graph on the stream. Return: 0, GPU_E_CUDA. */
int gpu_graph_launch(GpuGraph *graph)
{
        gpu_activity_begin();
        return CHECK(cuGraphLaunch((CUgraphExec)graph, stream));
}

void gpu_graph_destroy(GpuGraph *graph)
{
        if (graph)
                cuGraphExecDestroy((CUgraphExec)graph);
}

/** gpu_alloc() - device memory (not zeroed). Return: 0, GPU_E_CUDA (CUDA_ERROR_OUT_OF_MEMORY). */
int gpu_alloc(size_t bytes, GpuPtr *ret_ptr)
{
        CUdeviceptr p;
        int r;

        if ((r = CHECK(cuMemAlloc(&p, bytes))))
                return r;
        *ret_ptr = (GpuPtr)p;
        return 0;
}

/** gpu_free() - free device memory; 0 is accepted. Return: 0, GPU_E_CUDA. */
int gpu_free(GpuPtr ptr)
{
        return ptr ? CHECK(cuMemFree((CUdeviceptr)ptr)) : 0;
}

/** gpu_host_alloc() - page-locked host memory (lives as long as the process). */
int gpu_host_alloc(size_t bytes, void **ret_ptr)
{
        return CHECK(cuMemAllocHost(ret_ptr, bytes));
}

int gpu_memset8(GpuPtr dst, uint8_t value, size_t bytes)
{
        return bytes ? (gpu_activity_begin(), CHECK(cuMemsetD8Async((CUdeviceptr)dst, value, bytes, stream))) : 0;
}

int gpu_memset32(GpuPtr dst, uint32_t value, size_t words)
{
        return words ? (gpu_activity_begin(), CHECK(cuMemsetD32Async((CUdeviceptr)dst, value, words, stream))) : 0;
}

int gpu_copy_dtod(GpuPtr dst, GpuPtr src, size_t bytes)
{
        return bytes ? (gpu_activity_begin(), CHECK(cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, stream))) : 0;
}

/* @pinned_dst must come from gpu_host_alloc(), so the copy is truly async
 * and never blocks behind a spinning kernel. */
int gpu_copy_dtoh(void *pinned_dst, GpuPtr src, size_t bytes)
{
        return bytes ? (gpu_activity_begin(), CHECK(cuMemcpyDtoHAsync(pinned_dst, (CUdeviceptr)src, bytes, stream))) : 0;
}

int gpu_copy_htod(GpuPtr dst, const void *pinned_src, size_t bytes)
{
        return bytes ? (gpu_activity_begin(), CHECK(cuMemcpyHtoDAsync((CUdeviceptr)dst, pinned_src, bytes, stream))) : 0;
}

int gpu_mem_info(size_t *ret_free, size_t *ret_total)
{
        return CHECK(cuMemGetInfo(ret_free, ret_total));
}

/** gpu_event_create() - an event with timing enabled (gpu_event_destroy()). */
int gpu_event_create(GpuEvent **ret_event)
{
        CUevent e;
        int r;

        if ((r = CHECK(cuEventCreate(&e, CU_EVENT_DEFAULT))))
                return r;
        *ret_event = (GpuEvent *)e;
        return 0;
}

void gpu_event_destroy(GpuEvent *event)
{
        if (event)
                (void)CHECK(cuEventDestroy((CUevent)event));
}

int gpu_event_record(GpuEvent *event)
{
        int r;

        /* a marker, not work: it opens no activity segment (an idle
         * gpu_stream_wait() then costs no extra event) */
        if ((r = CHECK(cuEventRecord((CUevent)event, stream))) == 0) {
                seg_last = (CUevent)event;
                seg_dirty = false;
        }
        return r;
}

static void sleep_ns(int64_t ns)
{
        struct timespec ts = { .tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL };

        while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
                ;
}

/**
 * gpu_event_wait() - wait for @event with the deadline: poll cuEventQuery,
 * spinning for the first ~100 us (short kernels answer fast), then sleeping
 * 10 us doubling to 1 ms.
 * Return: 0, GPU_E_TIMEOUT, GPU_E_CUDA (an asynchronous error surfaced: a
 * kernel fault shows up here).
 */
int gpu_event_wait(GpuEvent *event)
{
        int64_t start = gpu_now_ns(), nap = 10000;

        for (;;) {
                CUresult r = cuEventQuery((CUevent)event);
                int64_t now;
                if (r == CUDA_SUCCESS) {
                        activity_end((CUevent)event);
                        return 0;
                }
                if (r != CUDA_ERROR_NOT_READY)
                        return check(r, "cuEventQuery");
                now = gpu_now_ns();
                if (now >= deadline_ns)
                        return GPU_E_TIMEOUT;
                if (now - start < 100000)
                        continue;
                sleep_ns(nap);
                if (nap < 1000000)
                        nap *= 2;
        }
}

/** gpu_event_elapsed_ms() - time between two completed events. Return: 0, GPU_E_CUDA. */
int gpu_event_elapsed_ms(GpuEvent *start, GpuEvent *end, double *ret_ms)
{
        float ms = 0;
        int r;

        if ((r = CHECK(cuEventElapsedTime(&ms, (CUevent)start, (CUevent)end))))
                return r;
        *ret_ms = ms;
        return 0;
}

/** gpu_stream_wait() - wait for everything queued so far. Return: as gpu_event_wait(). */
int gpu_stream_wait(void)
{
        int r;

        if ((r = gpu_event_record((GpuEvent *)wait_event)))
                return r;
        return gpu_event_wait((GpuEvent *)wait_event);
}
