/*
 * limits - every hard limit on a quantity that a client or a child process
 * controls, named in one place. Configurable limits (batch size, queue depth,
 * quotas) take their defaults and ceilings from here; the rest are fixed.
 * The OpenAPI document and the JSON Schemas repeat these numbers; the
 * integration test tests/integration/test_openapi.py keeps them in step.
 */
#pragma once

/* HTTP */
#define LIMIT_BODY_BYTES_PER_ITEM (8u << 10)   /* room per submission of a full default batch */
#define LIMIT_BODY_BYTES_DEFAULT (LIMIT_BATCH_DEFAULT * LIMIT_BODY_BYTES_PER_ITEM) /* 32 MiB; 413 beyond */
#define LIMIT_BODY_BYTES_MAX (512u << 20)
#define LIMIT_BATCH_DEFAULT 4096               /* submissions per POST */
#define LIMIT_BATCH_MAX 16384
#define LIMIT_WAIT_SECONDS_MAX 600             /* ?wait=S */
#define LIMIT_LIST_PAGE_MAX 1000               /* ?limit=N */
#define LIMIT_IDEMPOTENCY_KEY_BYTES 255
#define LIMIT_HOST_ID_BYTES 63                 /* --host-id: [A-Za-z0-9._-] */
#define LIMIT_DSN_BYTES 4096                   /* --db: a file path or a postgresql:// URI */
#define LIMIT_TAG_STRING_BYTES 256
#define LIMIT_TAGS_MAX 32
#define LIMIT_TAG_TEMPERATURE_MAX 100          /* tags.temperature */
#define LIMIT_JSON_DEPTH 32
/* The parse tree a body may cost, checked on its text before parsing
 * (server/http/bodyscan.c): this many bytes per body byte, plus the slack. */
#define LIMIT_JSON_TREE_RATIO 2
#define LIMIT_JSON_TREE_SLACK_BYTES (16u << 20)

/* Submissions */
#define LIMIT_SOURCE_BYTES (1u << 20)          /* CUDA or PTX source */
#define LIMIT_OPTIONS_MAX 32                   /* compile options */
#define LIMIT_OPTION_BYTES 256
#define LIMIT_MACRO_NAME_BYTES 64              /* -DNAME / -UNAME */
#define LIMIT_MACRO_VALUE_BYTES 128            /* -DNAME=VALUE */
#define LIMIT_HEADER_NAME_BYTES 255            /* #include <name> */
#define LIMIT_NAME_EXPRESSIONS_MAX 64
#define LIMIT_NAME_BYTES 256                   /* kernel, buffer, param names */
#define LIMIT_LAUNCHES_MAX 64                  /* launches per plan */
#define LIMIT_ARGS_MAX 64                      /* arguments per launch */
#define LIMIT_SCRATCH_BUFFERS_MAX 16
#define LIMIT_SCRATCH_BYTES_MAX (4ull << 30)   /* all scratch of one shape set */
#define LIMIT_EXPR_BYTES 1024
#define LIMIT_EXPR_DEPTH 32
#define LIMIT_TIMING_BUDGET_MS_MAX 60000
#define LIMIT_TIMING_TRIALS_MAX 10000
#define LIMIT_FRONTEND_BYTES 64              /* "frontend": the tool that made a PTX submission */

/* Tasks */
#define LIMIT_TASK_PARAMS_MAX 32
#define LIMIT_TASK_SHAPES_MAX 8
#define LIMIT_TASK_BUFFERS_MAX 32
#define LIMIT_TASK_DIMS_MAX 8
#define LIMIT_TASK_BYTES_MAX (24ull << 30)     /* all task buffers of one shape set */
#define LIMIT_TASK_TEXT_BYTES (64u << 10)      /* description, notes */

/* KernelBench tasks (common/kbtasks.c) and submissions (language "kernelbench") */
#define LIMIT_KB_INDEX_BYTES (8u << 20)        /* tasks/kernelbench/index.json */
#define LIMIT_KB_TASKS_MAX 4096                /* entries of the index */
#define LIMIT_KB_MODULE_BYTES (256u << 10)     /* one reference module (.py) */
#define LIMIT_KB_CONSTANTS_MAX 32              /* module-level constants of one shape set */
#define LIMIT_KB_CONSTANT_BYTES 256            /* one constant given as a Python expression ("2048 * 2") */
#define LIMIT_KB_CONSTANT_ITEMS 8              /* one constant given as a list (kernel_size [3, 5, 7]) */
#define LIMIT_KB_BUILD_MS_DEFAULT 300000       /* torch_build_timeout_s: one load_inline build */
#define LIMIT_KB_BUILD_LOG_BYTES (64u << 10)   /* a build RESULT's log */
#define LIMIT_KB_DEADLINE_MS_MAX 600000        /* a kevald-torch JOB's deadline_ms (the worker refuses more) */
#define LIMIT_TORCH_EXT_BYTES_DEFAULT (16ull << 30) /* <data dir>/torch-ext, pruned oldest first */
#define LIMIT_KB_RUNS_FILES_MAX 100000         /* `kevald kernelbench`: generations read from RUNS_DIR */

/* Compile worker */
#define LIMIT_COMPILE_WALL_MS 30000
#define LIMIT_COMPILE_CPU_S 60
#define LIMIT_COMPILE_AS_BYTES (4ull << 30)
#define LIMIT_COMPILE_LOG_BYTES (16u << 10)    /* log returned to clients */
#define LIMIT_CUBIN_BYTES (32u << 20)
#define LIMIT_COMPILE_NOFILE 256              /* open files of a compile worker */

/* Every worker (sandbox/rlimit.c) */
#define LIMIT_WORKER_CPU_LIFETIME_S 21600      /* RLIMIT_CPU hard limit: a worker's whole life */
#define LIMIT_WORKER_FILE_BYTES (1ull << 30)   /* RLIMIT_FSIZE (workers open no file for writing) */

/* Store */
#define LIMIT_COMPILE_CACHE_BYTES_DEFAULT (4ull << 30) /* store_cache_prune() target */

/* Child protocol (common/frame.h) */
#define LIMIT_FRAME_JSON_BYTES (8u << 20)
#define LIMIT_FRAME_BLOB_BYTES (96u << 20)

/* GPU worker */
#define LIMIT_FIRST_MISMATCHES 8
#define LIMIT_CORRECTNESS_TRIALS_MAX 16
#define LIMIT_PRINTF_FIFO_BYTES (1u << 20)
#define LIMIT_GPU_NOFILE 1024                  /* open files of a GPU worker (cuInit needs >= 64) */
/* After a launch limit passes, how long the worker waits for a fault that
 * the driver reports late before it calls the kernel hung (fault_grace_ms).
 * With one hardware queue per context (CUDA_DEVICE_MAX_CONNECTIONS=1, which
 * the worker sets) the slowest surfacing measured on an H100 is a misaligned
 * address at 287 ms, traps at 56-93 ms; with the driver's default 8 queues a
 * trap took 311-362 ms, and the default was 500 (BENCHMARKS.md, issue 13).
 * The least grace: the dispatcher raises it when faults surface late
 * (server/dispatch/dispatch.c grace_note()). */
#define LIMIT_FAULT_GRACE_MS_DEFAULT 300
/* The least a derived per-launch limit can be (launch_floor_ms): it clears a
 * first launch's own start (lazy module loading); a hung kernel on a small
 * shape set costs this plus the grace. */
#define LIMIT_LAUNCH_FLOOR_MS_DEFAULT 100

/* Command-line client (server/cmd/httpclient.c) */
#define LIMIT_CLIENT_HEADER_BYTES (64u << 10)    /* response status line and headers */
#define LIMIT_CLIENT_RESPONSE_BYTES (64u << 20)  /* response body */
#define LIMIT_CLIENT_URL_BYTES 2048              /* --server URL, request target */

/* HTTP connections (server/http/http.c); defaults of `kevald serve` options */
#define LIMIT_BODY_INFLIGHT_BYTES_DEFAULT (128u << 20) /* request bodies held at once; 503 beyond */
#define LIMIT_PER_IP_CONNECTIONS_DEFAULT 1024          /* open connections from one address (a quarter of 4096) */
#define LIMIT_HEADER_TIMEOUT_S_DEFAULT 10              /* a whole request header, from its first byte's turn */
#define LIMIT_HTTP_LOG_PER_MINUTE 60                   /* libmicrohttpd's own log lines; the rest are counted */
