/*
 * spec_prompt - a task rendered as a plain-text prompt that a model can act
 * on (GET /v1/tasks/{name}/prompt, `kevald task prompt`): what to compute,
 * the buffers and params for every shape set, the submission and launch
 * plan contract, the compile options, the tolerance, and a minimal correct
 * example (the task's own example, or else its reference adapted).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/spec_internal.h"

typedef struct Buf {
        char *s;
        size_t len, cap;
        bool oom;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(Buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (b->oom)
                return;
        for (;;) {
                size_t room = b->cap - b->len;
                va_start(ap, fmt);
                n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        b->oom = true;
                        return;
                }
                if (b->s && (size_t)n < room) {
                        b->len += (size_t)n;
                        return;
                }
                size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
                char *s = realloc(b->s, cap);
                if (!s) {
                        b->oom = true;
                        return;
                }
                b->s = s;
                b->cap = cap;
        }
}

static void put_expr(Buf *b, json_t *v)
{
        if (json_is_integer(v))
                put(b, "%lld", (long long)json_integer_value(v));
        else if (json_is_string(v))
                put(b, "%s", json_string_value(v));
        else if (json_is_number(v))
                put(b, "%g", json_number_value(v));
}

static void put_dims(Buf *b, json_t *arr)
{
        size_t i;
        json_t *v;

        put(b, "[");
        json_array_foreach(arr, i, v) {
                put(b, "%s", i ? ", " : "");
                put_expr(b, v);
        }
        put(b, "]");
}

static const char *c_type(const char *dtype)
{
        static const char *const map[][2] = {
                { "f32", "float" },  { "f16", "__half" },   { "bf16", "__nv_bfloat16" },
                { "f64", "double" }, { "i8", "int8_t" },    { "u8", "uint8_t" },
                { "i32", "int" },    { "i64", "long long" }, { "u32", "unsigned int" },
                { "u64", "unsigned long long" },
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (!strcmp(map[i][0], dtype))
                        return map[i][1];
        return dtype;
}

static void put_init(Buf *b, json_t *init)
{
        const char *dist = json_string_value(json_object_get(init, "dist"));
        json_t *v;

        if (!strcmp(dist, "normal")) {
                v = json_object_get(init, "mean");
                put(b, "normal(mean %g, ", v ? json_number_value(v) : 0.0);
                v = json_object_get(init, "std");
                put(b, "std %g)", v ? json_number_value(v) : 1.0);
        } else if (!strcmp(dist, "uniform")) {
                v = json_object_get(init, "low");
                put(b, "uniform[%g, ", v ? json_number_value(v) : -1.0);
                v = json_object_get(init, "high");
                put(b, "%g)", v ? json_number_value(v) : 1.0);
        } else if (!strcmp(dist, "int")) {
                put(b, "random integers in [");
                v = json_object_get(init, "low");
                if (v)
                        put_expr(b, v);
                else
                        put(b, "0");
                put(b, ", ");
                put_expr(b, json_object_get(init, "high"));
                put(b, ")");
        } else {
                put(b, "mixed scale (random sign, magnitude 10^U(-3, 3))");
        }
        if ((v = json_object_get(init, "fan_in"))) {
                put(b, " scaled by 1/sqrt(");
                put_expr(b, v);
                put(b, ")");
        }
        if ((v = json_object_get(init, "offset")))
                put(b, " plus %g", json_number_value(v));
}

/* An array, one element per line (compact), so plans stay readable. */
static void put_plan(Buf *b, json_t *plan)
{
        size_t i;
        json_t *v;

        put(b, "[");
        json_array_foreach(plan, i, v) {
                char *s = json_dumps(v, JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
                if (!s) {
                        b->oom = true;
                        return;
                }
                put(b, "%s\n  %s", i ? "," : "", s);
                free(s);
        }
        put(b, "\n]\n");
}

/* The "Buffers" section: each buffer's dtype, role, shape and element
 * counts per shape set, its inputs' distribution. */
static void put_buffers(Buf *b, const Task *task)
{
        json_t *v;

        put(b, "\n## Buffers (row-major, contiguous, in device memory)\n\n");
        for (size_t i = 0; i < task->nbuffers; i++) {
                json_t *buf = task->buffers[i];
                const char *role = spec_role_names[task->buffer_role[i]];
                put(b, "- %s: %s%s, %s", json_string_value(json_object_get(buf, "name")),
                    task->buffer_dtype[i]->name,
                    json_array_size(json_object_get(buf, "shape")) ? "" : " scalar", role);
                if (json_array_size(json_object_get(buf, "shape"))) {
                        put(b, ", shape ");
                        put_dims(b, json_object_get(buf, "shape"));
                        put(b, " (");
                        for (size_t s = 0; s < task->nshapes; s++)
                                put(b, "%s%s: %lld elements", s ? "; " : "",
                                    task->shape_names[s], (long long)task->buffer_count[s][i]);
                        put(b, ")");
                }
                if ((v = json_object_get(buf, "init"))) {
                        put(b, ", initialised with ");
                        put_init(b, v);
                }
                if (task->buffer_role[i] == ROLE_OUT)
                        put(b, ", write every element (it is filled with garbage before your "
                                "kernel runs)");
                if (task->buffer_role[i] == ROLE_INOUT)
                        put(b, ", read and updated in place");
                if ((v = json_object_get(buf, "description")))
                        put(b, ": %s", json_string_value(v));
                put(b, "\n");
        }
}

/* The "Correctness" section: how outputs are compared, each output's
 * tolerance (its own, else the task's @tol for floats, else the dtype's). */
static void put_correctness(Buf *b, const Task *task, json_t *tol)
{
        json_t *v;

        put(b, "\n## Correctness\n\n");
        put(b, "Outputs are compared with the reference on fresh random inputs; an element "
                "matches when |got - want| <= atol + rtol * |want| and NaN/Inf agree:\n");
        for (size_t i = 0; i < task->nbuffers; i++) {
                const DType *dt = task->buffer_dtype[i];
                json_t *bt = json_object_get(task->buffers[i], "tolerance");
                double def = spec_tolerance_default(dt);
                double atol = def, rtol = def;
                json_t *src = bt ? bt : (!dt->is_int ? tol : NULL);
                if (task->buffer_role[i] == ROLE_IN)
                        continue;
                if (src && (v = json_object_get(src, "atol")))
                        atol = json_number_value(v);
                if (src && (v = json_object_get(src, "rtol")))
                        rtol = json_number_value(v);
                if (atol == 0 && rtol == 0)
                        put(b, "- %s: exact\n",
                            json_string_value(json_object_get(task->buffers[i], "name")));
                else
                        put(b, "- %s: atol %g, rtol %g\n",
                            json_string_value(json_object_get(task->buffers[i], "name")), atol,
                            rtol);
        }
        put(b, "Writes outside a buffer, changes to input buffers, and results that differ "
                "between two identical runs are failures.\n");
}

/* What both prompts open with: the task, its params and shape sets, its
 * buffers and how outputs are checked. @what: "a CUDA kernel (one or more
 * launches)", ... */
static void put_head(Buf *b, const Task *task, const char *what)
{
        json_t *d = task->doc, *v;
        const char *key;

        put(b, "# Task %s: %s\n\n", task->name, json_string_value(json_object_get(d, "title")));
        put(b, "Write %s that computes:\n\n%s\n\n", what,
            json_string_value(json_object_get(d, "description")));

        put(b, "## Parameters\n\n");
        if (json_object_size(task->params) == 0)
                put(b, "(none: the sizes are fixed)\n");
        json_object_foreach(task->params, key, v)
                put(b, "- %s: %s\n", key, json_string_value(v));
        put(b, "\nShape sets (your kernel must be correct for every one; the first is the main "
               "benchmark size):\n\n");
        for (size_t i = 0; i < task->nshapes; i++) {
                bool first = true;
                put(b, "- %s:", task->shape_names[i]);
                json_object_foreach(task->shape_params[i], key, v) {
                        put(b, "%s %s=%lld", first ? "" : ",", key,
                            (long long)json_integer_value(v));
                        first = false;
                }
                put(b, "\n");
        }

        put_buffers(b, task);
        put_correctness(b, task, json_object_get(d, "tolerance"));
}

/**
 * spec_task_prompt() - render a task as a prompt
 * @task:            borrowed
 * @allowed_options: array of strings describing the allowed compile options,
 *                   or NULL for the built-in summary of the allowlist
 * Return: a new NUL-terminated string (free()), or NULL on allocation failure.
 */
char *spec_task_prompt(const Task *task, json_t *allowed_options)
{
        json_t *d = task->doc, *v, *ref = json_object_get(d, "reference"),
               *ex = json_object_get(d, "example"), *code;
        Buf b = { 0 };
        size_t i;

        put_head(&b, task, "a CUDA kernel (one or more launches)");

        put(&b, "\n## What to submit\n\n");
        put(&b, "A JSON object:\n\n"
                "- \"task\": \"%s\"\n"
                "- \"source\": CUDA C++ device code (NVRTC: no main(), <<<>>> launches, "
                "cudaMalloc or PyTorch; #include only CUDA toolkit headers and the standard headers "
                "device code uses, such as <cmath>, <cstdint>, <cfloat>, <climits>, <algorithm>, "
                "<type_traits>). Every kernel the plan launches is `extern \"C\" __global__`, "
                "or is a template instantiation listed in \"name_expressions\" (e.g. "
                "\"my_kernel<float, 256>\") and named by that expression in the plan.\n"
                "- \"plan\": a list of at most %d launches run in order on one stream: "
                "{\"kernel\": NAME, \"grid\": [x, y?, z?], \"block\": [x, y?, z?], \"shared\": "
                "dynamic shared memory bytes, \"args\": [...]}. grid, block and shared are "
                "integers or integer expressions over the params (+ - * / %% ceil_div(a,b) "
                "min(a,b) max(a,b)); block has at most 1024 threads; shared at most %d bytes.\n"
                "- \"args\" follow the kernel's parameters in order: a buffer name passes a "
                "device pointer to that buffer (",
            task->name, LIMIT_LAUNCHES_MAX, SPEC_SHARED_BYTES_MAX);
        for (i = 0; i < task->nbuffers; i++)
                put(&b, "%s%s -> %s%s*", i ? ", " : "",
                    json_string_value(json_object_get(task->buffers[i], "name")),
                    task->buffer_role[i] == ROLE_IN ? "const " : "",
                    c_type(task->buffer_dtype[i]->name));
        put(&b, "); {\"type\": T, \"value\": V} passes a scalar of type T (i32 -> int, u32 -> "
                "unsigned int, i64 -> long long, u64 -> unsigned long long, f32 -> float, f64 -> "
                "double), V a number or, for integer types, an expression over the params. "
                "Argument count and sizes are checked against the compiled kernel.\n"
                "- \"scratch\" (optional): up to %d temporary buffers [{\"name\", \"dtype\", "
                "\"count\": expression}], zeroed before each run, passed by name like buffers.\n",
            LIMIT_SCRATCH_BUFFERS_MAX);
        put(&b, "- \"options\" (optional): compile options; allowed: ");
        if (allowed_options && json_array_size(allowed_options)) {
                json_array_foreach(allowed_options, i, v)
                        put(&b, "%s%s", i ? " " : "", json_string_value(v));
        } else {
                put(&b, "-use_fast_math -ftz=true|false -prec-div=true|false "
                        "-prec-sqrt=true|false -fmad=true|false -lineinfo -maxrregcount=N "
                        "-std=c++11|14|17|20 -DNAME[=VALUE] -UNAME --extra-device-vectorization "
                        "-restrict -default-device -dopt=on -O0..3");
        }
        put(&b, ".\n\nYou are scored on correctness first, then on speed: the median time of "
                "your whole plan against the reference's, on every shape set.\n");

        code = ex ? ex : ref;
        put(&b, "\n## %s\n\n",
            ex ? "Example of a correct submission (simple, not fast)"
               : "The reference implementation (a correct starting point)");
        if (json_object_get(code, "source")) {
                put(&b, "source:\n```cuda\n%s%s```\n\n",
                    json_string_value(json_object_get(code, "source")),
                    json_string_value(json_object_get(code, "source"))
                                            [json_string_length(json_object_get(code, "source")) -
                                             1] == '\n'
                            ? ""
                            : "\n");
        }
        if (json_array_size(json_object_get(code, "scratch"))) {
                put(&b, "scratch:\n```json\n");
                put_plan(&b, json_object_get(code, "scratch"));
                put(&b, "```\n\n");
        }
        if (json_array_size(json_object_get(code, "name_expressions"))) {
                put(&b, "name_expressions:\n```json\n");
                put_plan(&b, json_object_get(code, "name_expressions"));
                put(&b, "```\n\n");
        }
        put(&b, "plan:\n```json\n");
        put_plan(&b, json_object_get(code, "plan"));
        put(&b, "```\n");
        if (!ex) {
                json_array_foreach(json_object_get(ref, "plan"), i, v) {
                        if (json_object_get(v, "library")) {
                                put(&b, "\nThe reference calls a vendor library (step %zu: "
                                        "cuBLAS %s); library steps are not available to "
                                        "submissions: write the kernel yourself.\n",
                                    i, json_string_value(json_object_get(v, "library")));
                                break;
                        }
                }
        }
        if (b.oom) {
                free(b.s);
                return NULL;
        }
        return b.s;
}

/* ---- the Triton variant (?language=triton) ------------------------------ */

/*
 * TRITON EXAMPLES: one short kernel per task family, each written for the
 * library task it names and launched through kevald.triton (the Python
 * client, clients/python/kevald/triton.py). They live here and only here;
 * issue 28's GPU check runs each against its task (the lead's GPU session),
 * so a change to one must be verified there again.
 */
typedef struct TritonExample {
        const char *family;  /* what the prompt calls it */
        const char *task;    /* the library task the example solves */
        const char *code;    /* Python: the kernel and the kevald.triton call */
} TritonExample;

static const TritonExample triton_elementwise = {
        "elementwise", "l1_19_relu",
        "import triton\n"
        "import triton.language as tl\n"
        "import kevald, kevald.triton\n"
        "\n"
        "@triton.jit\n"
        "def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    x = tl.load(x_ptr + offs, mask=mask)\n"
        "    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n"
        "\n"
        "with kevald.Client() as client:\n"
        "    sub = kevald.triton.evaluate(client, relu_kernel, task=\"l1_19_relu\",\n"
        "                                 grid=[\"ceil_div(B * D, 1024)\"],\n"
        "                                 args={\"x_ptr\": \"x\", \"y_ptr\": \"y\", \"n\": (\"i64\", \"B * D\")},\n"
        "                                 constexprs={\"BLOCK\": 1024}, num_warps=4)\n",
};

static const TritonExample triton_reduction = {
        "reduction", "l1_47_sum_reduction_over_a_dimension",
        "import triton\n"
        "import triton.language as tl\n"
        "import kevald, kevald.triton\n"
        "\n"
        "# y[b, 0, j] = sum over i of x[b, i, j]; one program per (b, block of j)\n"
        "@triton.jit\n"
        "def sum_dim1_kernel(x_ptr, y_ptr, D1, D2, BLOCK: tl.constexpr):\n"
        "    b = tl.program_id(1).to(tl.int64)\n"
        "    j = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = j < D2\n"
        "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
        "    for i in range(0, D1):\n"
        "        acc += tl.load(x_ptr + (b * D1 + i) * D2 + j, mask=mask, other=0.0)\n"
        "    tl.store(y_ptr + b * D2 + j, acc, mask=mask)\n"
        "\n"
        "with kevald.Client() as client:\n"
        "    sub = kevald.triton.evaluate(client, sum_dim1_kernel,\n"
        "                                 task=\"l1_47_sum_reduction_over_a_dimension\",\n"
        "                                 grid=[\"ceil_div(D2, 256)\", \"B\"],\n"
        "                                 args={\"x_ptr\": \"x\", \"y_ptr\": \"y\", \"D1\": \"D1\", \"D2\": \"D2\"},\n"
        "                                 constexprs={\"BLOCK\": 256}, num_warps=2)\n",
};

static const TritonExample triton_softmax = {
        "softmax-like", "l1_23_softmax",
        "import triton\n"
        "import triton.language as tl\n"
        "import kevald, kevald.triton\n"
        "\n"
        "@triton.jit\n"
        "def softmax_kernel(x_ptr, y_ptr, D, BLOCK: tl.constexpr):\n"
        "    row = tl.program_id(0).to(tl.int64)\n"
        "    x_row = x_ptr + row * D\n"
        "    y_row = y_ptr + row * D\n"
        "    m = tl.full([BLOCK], float(\"-inf\"), tl.float32)\n"
        "    for start in range(0, D, BLOCK):\n"
        "        offs = start + tl.arange(0, BLOCK)\n"
        "        m = tl.maximum(m, tl.load(x_row + offs, mask=offs < D, other=float(\"-inf\")))\n"
        "    row_max = tl.max(m, axis=0)\n"
        "    s = tl.zeros([BLOCK], dtype=tl.float32)\n"
        "    for start in range(0, D, BLOCK):\n"
        "        offs = start + tl.arange(0, BLOCK)\n"
        "        s += tl.exp(tl.load(x_row + offs, mask=offs < D, other=float(\"-inf\")) - row_max)\n"
        "    row_sum = tl.sum(s, axis=0)\n"
        "    for start in range(0, D, BLOCK):\n"
        "        offs = start + tl.arange(0, BLOCK)\n"
        "        x = tl.load(x_row + offs, mask=offs < D, other=float(\"-inf\"))\n"
        "        tl.store(y_row + offs, tl.exp(x - row_max) / row_sum, mask=offs < D)\n"
        "\n"
        "with kevald.Client() as client:\n"
        "    sub = kevald.triton.evaluate(client, softmax_kernel, task=\"l1_23_softmax\",\n"
        "                                 grid=[\"B\"], args={\"x_ptr\": \"x\", \"y_ptr\": \"y\", \"D\": \"D\"},\n"
        "                                 constexprs={\"BLOCK\": 2048}, num_warps=8)\n",
};

static const TritonExample triton_matmul = {
        "matmul (tl.dot)", "l1_1_square_matrix_multiplication",
        "import triton\n"
        "import triton.language as tl\n"
        "import kevald, kevald.triton\n"
        "\n"
        "@triton.jit\n"
        "def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,\n"
        "                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
        "    rm = tl.program_id(0) * BM + tl.arange(0, BM)\n"
        "    rn = tl.program_id(1) * BN + tl.arange(0, BN)\n"
        "    rk = tl.arange(0, BK)\n"
        "    acc = tl.zeros([BM, BN], dtype=tl.float32)\n"
        "    for k in range(0, K, BK):\n"
        "        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],\n"
        "                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)\n"
        "        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],\n"
        "                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)\n"
        "        # f32 outputs are checked to 1e-4: full precision, not TF32\n"
        "        acc = tl.dot(a, b, acc, input_precision=\"ieee\")\n"
        "    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,\n"
        "             mask=(rm[:, None] < M) & (rn[None, :] < N))\n"
        "\n"
        "with kevald.Client() as client:\n"
        "    sub = kevald.triton.evaluate(client, matmul_kernel, task=\"l1_1_square_matrix_multiplication\",\n"
        "                                 grid=[\"ceil_div(N, 64)\", \"ceil_div(N, 64)\"],\n"
        "                                 args={\"a_ptr\": \"A\", \"b_ptr\": \"B\", \"c_ptr\": \"C\",\n"
        "                                       \"M\": \"N\", \"N\": \"N\", \"K\": \"N\"},\n"
        "                                 constexprs={\"BM\": 64, \"BN\": 64, \"BK\": 32},\n"
        "                                 num_warps=4, num_stages=3)\n",
};

/* The example for a task's category (docs/tasks.md lists them); elementwise by default. */
static const TritonExample *triton_example_for(const char *category)
{
        static const struct {
                const char *category;
                const TritonExample *ex;
        } map[] = {
                { "matmul", &triton_matmul },          { "gemm_epilogue", &triton_matmul },
                { "gemm_reduction", &triton_matmul },  { "gemm_norm", &triton_matmul },
                { "conv", &triton_matmul },            { "conv_epilogue", &triton_matmul },
                { "softmax", &triton_softmax },        { "norm", &triton_softmax },
                { "reduction", &triton_reduction },    { "argreduce", &triton_reduction },
                { "loss", &triton_reduction },         { "scan", &triton_reduction },
                { "pooling", &triton_reduction },
        };

        for (size_t i = 0; category && i < sizeof(map) / sizeof(map[0]); i++)
                if (!strcmp(map[i].category, category))
                        return map[i].ex;
        return &triton_elementwise;
}

/* Triton's name for a buffer dtype in a pointer type (*fp32, ...). */
static const char *triton_type(const char *dtype)
{
        static const char *const map[][2] = {
                { "f32", "fp32" }, { "f16", "fp16" }, { "bf16", "bf16" }, { "f64", "fp64" },
                { "i8", "i8" },    { "u8", "u8" },    { "i32", "i32" },   { "i64", "i64" },
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (!strcmp(map[i][0], dtype))
                        return map[i][1];
        return dtype;
}

/**
 * spec_task_prompt_triton() - render a task as a prompt for a Triton kernel
 * @task: borrowed
 *
 * The same task, params, buffers and correctness sections as
 * spec_task_prompt(); then how kevald runs a Triton kernel (the Python
 * client compiles it to PTX with the user's Triton and submits it with a
 * plan: kevald.triton) and one example of the task's family.
 * Return: a new NUL-terminated string (free()), or NULL on allocation failure.
 */
char *spec_task_prompt_triton(const Task *task)
{
        const TritonExample *ex =
                triton_example_for(json_string_value(json_object_get(task->doc, "category")));
        Buf b = { 0 };

        put_head(&b, task, "a Triton kernel (one `@triton.jit` function, launched once)");
        put(&b, "\n## How kevald runs a Triton kernel\n\n"
                "kevald runs no Python. The kevald Python client (`kevald.triton`; it needs "
                "Triton installed where it runs, no GPU) compiles your `@triton.jit` function "
                "with that Triton for the server's GPU and submits the PTX with a launch plan; "
                "the kernel is then judged like any other (fresh random inputs, every shape set, "
                "faults and out-of-bounds accesses caught, timed against the reference):\n\n"
                "```python\n"
                "sub = kevald.triton.evaluate(client, kernel, task=\"%s\", grid=[...], args={...},\n"
                "                             constexprs={...}, num_warps=4, num_stages=3)\n"
                "```\n\n"
                "- `args` maps each parameter of the kernel that is not a `tl.constexpr` to a "
                "value: a buffer name passes a pointer to that buffer (",
            task->name);
        for (size_t i = 0; i < task->nbuffers; i++)
                put(&b, "%s%s -> *%s", i ? ", " : "",
                    json_string_value(json_object_get(task->buffers[i], "name")),
                    triton_type(task->buffer_dtype[i]->name));
        put(&b, "); a string that is no buffer name is an integer expression over the params "
                "(i32; write (\"i64\", \"B * D\") for a 64-bit one); a Python float is an fp32.\n"
                "- `grid`: 1 to 3 integer expressions over the params (+ - * / %% ceil_div(a,b) "
                "min(a,b) max(a,b)), the programs along `tl.program_id(0..2)`; grid y and z at most "
                "65535.\n"
                "- `constexprs` are the `tl.constexpr` parameters. One compiled kernel runs every "
                "shape set, so sizes are runtime arguments and masks cover the ragged edges; a "
                "block size is a constexpr.\n"
                "- `num_warps` sets the block (32 * num_warps threads); `num_stages` the software "
                "pipelining of loops.\n"
                "- Offsets can pass 2^31 in the large shape sets: compute them in int64 "
                "(`tl.program_id(0).to(tl.int64)`).\n"
                "- f32 outputs are checked to about 1e-4: `tl.dot` on f32 inputs needs "
                "`input_precision=\"ieee\"` (the default TF32 is not precise enough).\n"
                "- The scratch pointers Triton adds to a kernel's parameters are passed by the "
                "client; you write only the kernel.\n"
                "\nYou are scored on correctness first, then on speed: the median time of your "
                "kernel against the reference's.\n");
        put(&b, "\n## Example of the %s pattern (written for task %s: adapt it to this one)\n\n"
                "```python\n%s```\n",
            ex->family, ex->task, ex->code);
        if (b.oom) {
                free(b.s);
                return NULL;
        }
        return b.s;
}
