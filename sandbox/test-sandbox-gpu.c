/*
 * test-sandbox-gpu - the GPU profile on a real GPU: sandbox_enter(GPU) before
 * cuInit, warm-up (context, NVRTC compile for the device's arch, module
 * load, one launch), sandbox_lock(GPU), then what a GPU worker does per job:
 * allocate, copy, load another CUBIN, launch, event-time, synchronise, copy
 * back, check, free. Then that the locked worker cannot open host files,
 * reach the network or create sockets. The driver is loaded with dlopen, so
 * the test builds everywhere and exits 77 (skipped) where there is no
 * libcuda.so.1. Suite "gpu"; on the GPU host run the binary directly:
 *   LD_LIBRARY_PATH=<bundle>:/usr/local/cuda/lib64 ./test-sandbox-gpu
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

#define CHECK(c)                                                                             \
        do {                                                                                 \
                if (!(c)) {                                                                  \
                        fprintf(stderr, "%s:%d: check failed: %s (errno %s)\n", __FILE__,   \
                                __LINE__, #c, strerror(errno));                             \
                        _exit(1);                                                            \
                }                                                                            \
        } while (0)
#define CU(call) CHECK((call) == CUDA_SUCCESS)

static struct {
        __typeof__(&cuInit) Init;
        __typeof__(&cuDeviceGet) DeviceGet;
        __typeof__(&cuDeviceGetAttribute) DeviceGetAttribute;
        __typeof__(&cuDevicePrimaryCtxRetain) PrimaryCtxRetain;
        __typeof__(&cuCtxSetCurrent) CtxSetCurrent;
        __typeof__(&cuModuleLoadData) ModuleLoadData;
        __typeof__(&cuModuleGetFunction) ModuleGetFunction;
        __typeof__(&cuMemAlloc) MemAlloc;
        __typeof__(&cuMemFree) MemFree;
        __typeof__(&cuMemcpyHtoD) MemcpyHtoD;
        __typeof__(&cuMemcpyDtoH) MemcpyDtoH;
        __typeof__(&cuLaunchKernel) LaunchKernel;
        __typeof__(&cuCtxSynchronize) CtxSynchronize;
        __typeof__(&cuEventCreate) EventCreate;
        __typeof__(&cuEventRecord) EventRecord;
        __typeof__(&cuEventSynchronize) EventSynchronize;
        __typeof__(&cuEventElapsedTime) EventElapsedTime;
} cu;

static void *lib;

static int load_driver(void)
{
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
                return -1;
#define SYM(field, name) CHECK((*(void **)&cu.field = dlsym(lib, name)) != NULL)
        SYM(Init, "cuInit");
        SYM(DeviceGet, "cuDeviceGet");
        SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
        SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
        SYM(CtxSetCurrent, "cuCtxSetCurrent");
        SYM(ModuleLoadData, "cuModuleLoadData");
        SYM(ModuleGetFunction, "cuModuleGetFunction");
        SYM(MemAlloc, "cuMemAlloc_v2");
        SYM(MemFree, "cuMemFree_v2");
        SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
        SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
        SYM(LaunchKernel, "cuLaunchKernel");
        SYM(CtxSynchronize, "cuCtxSynchronize");
        SYM(EventCreate, "cuEventCreate");
        SYM(EventRecord, "cuEventRecord");
        SYM(EventSynchronize, "cuEventSynchronize");
        if (!(*(void **)&cu.EventElapsedTime = dlsym(lib, "cuEventElapsedTime_v2")))
                SYM(EventElapsedTime, "cuEventElapsedTime");
        return 0;
}

static const char *kernel_src =
        "extern \"C\" __global__ void add1(float *x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }\n";

/* NVRTC -> CUBIN for @arch ("sm_90"); returns a new buffer. */
static char *compile_cubin(const char *arch, size_t *ret_size)
{
        char opt[32];
        nvrtcProgram p;
        snprintf(opt, sizeof(opt), "-arch=%s", arch);
        const char *opts[] = {opt};
        CHECK(nvrtcCreateProgram(&p, kernel_src, "k.cu", 0, NULL, NULL) == NVRTC_SUCCESS);
        CHECK(nvrtcCompileProgram(p, 1, opts) == NVRTC_SUCCESS);
        CHECK(nvrtcGetCUBINSize(p, ret_size) == NVRTC_SUCCESS);
        char *c = malloc(*ret_size);
        CHECK(c && nvrtcGetCUBIN(p, c) == NVRTC_SUCCESS);
        nvrtcDestroyProgram(&p);
        return c;
}

static void run_add1(CUmodule m, int n, float start)
{
        CUfunction f;
        CUdeviceptr d;
        CUevent e0, e1;
        float *h = malloc((size_t)n * sizeof(float)), ms = -1;
        CHECK(h);
        for (int i = 0; i < n; i++)
                h[i] = start + (float)i;
        CU(cu.ModuleGetFunction(&f, m, "add1"));
        CU(cu.MemAlloc(&d, (size_t)n * sizeof(float)));
        CU(cu.MemcpyHtoD(d, h, (size_t)n * sizeof(float)));
        CU(cu.EventCreate(&e0, 0));
        CU(cu.EventCreate(&e1, 0));
        void *args[] = {&d, &n};
        CU(cu.EventRecord(e0, NULL));
        CU(cu.LaunchKernel(f, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
        CU(cu.EventRecord(e1, NULL));
        CU(cu.EventSynchronize(e1));
        CU(cu.EventElapsedTime(&ms, e0, e1));
        CU(cu.CtxSynchronize());
        CU(cu.MemcpyDtoH(h, d, (size_t)n * sizeof(float)));
        for (int i = 0; i < n; i++)
                CHECK(h[i] == start + (float)i + 1.0f);
        CU(cu.MemFree(d));
        CHECK(ms >= 0);
        free(h);
}

typedef enum { AFTER_OK, AFTER_SOCKET, AFTER_OPEN } After;

static void worker(After after)
{
        SandboxReport rep = {0};
        CUdevice dev;
        CUcontext ctx;
        CUmodule m1, m2;
        int major = 0, minor = 0;
        char arch[16];
        size_t n1, n2;

        /* As in kevald-gpu, which links libcuda: the driver library is mapped
         * before the sandbox (on some hosts it lives outside the granted
         * library folders, e.g. /usr/local/nvidia/lib64). */
        CHECK(load_driver() == 0);
        CHECK(sandbox_enter(SANDBOX_PROFILE_GPU, NULL, 0, &rep) == 0);
        CU(cu.Init(0));
        CU(cu.DeviceGet(&dev, 0));
        CU(cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
        CU(cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
        CU(cu.PrimaryCtxRetain(&ctx, dev));
        CU(cu.CtxSetCurrent(ctx));
        snprintf(arch, sizeof(arch), "sm_%d%d", major, minor);
        char *c1 = compile_cubin(arch, &n1);
        char *c2 = compile_cubin(arch, &n2);
        CU(cu.ModuleLoadData(&m1, c1));
        run_add1(m1, 1000, 0.0f);   /* warm-up */
        CHECK(sandbox_lock(SANDBOX_PROFILE_GPU, &rep) == 0);
        char *s = json_dumps(rep.layers, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (after == AFTER_OK && s)
                printf("gpu profile report (%s):\n%s\n", arch, s);
        free(s);
        fflush(stdout);
        /* What a locked GPU worker does per job. */
        CU(cu.ModuleLoadData(&m2, c2));
        run_add1(m2, 1 << 20, 3.0f);
        run_add1(m1, 4096, 7.0f);
        if (after == AFTER_OPEN) {
                errno = 0;
                CHECK(open("/etc/passwd", O_RDONLY) < 0 && errno == EACCES);
                _exit(0);
        }
        if (after == AFTER_SOCKET)
                socket(AF_INET, SOCK_STREAM, 0);   /* must kill */
        free(c1);
        free(c2);
        _exit(0);
}

static int run(After after)
{
        int st;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0)
                worker(after);
        waitpid(pid, &st, 0);
        return st;
}

int main(void)
{
        int failures = 0, st;
        void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!probe) {
                printf("skip: no libcuda.so.1 (no GPU driver on this host)\n");
                return 77;
        }
        dlclose(probe);
        st = run(AFTER_OK);
        bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("%s gpu profile: cuInit, context, NVRTC, module load, launch, events, copies work "
               "under Landlock, netns, uid drop and the locked seccomp allowlist\n",
               ok ? "ok  " : "FAIL");
        if (!ok && WIFSIGNALED(st))
                printf("     killed by signal %d%s\n", WTERMSIG(st),
                       WTERMSIG(st) == SIGSYS ? " (a system call missing from the GPU allowlist: "
                                                "run under strace -f to see which)" : "");
        failures += !ok;
        st = run(AFTER_OPEN);
        ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("%s gpu profile: /etc/passwd cannot be opened after the lock\n", ok ? "ok  " : "FAIL");
        failures += !ok;
        st = run(AFTER_SOCKET);
        ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
        printf("%s gpu profile: socket() after the lock kills with SIGSYS\n", ok ? "ok  " : "FAIL");
        failures += !ok;
        printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
        return failures ? 1 : 0;
}
