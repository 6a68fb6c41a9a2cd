/*
 * api_tasks - GET /v1/tasks, /v1/tasks/{name} and /v1/tasks/{name}/prompt,
 * served from the task library and the KernelBench index loaded at start-up
 * (immutable, so no locks). Every summary says the languages its task
 * takes ("kernelbench" where the index has the task); a task only the index
 * has (no C task) is listed after the library's and served as its
 * KernelBench document (docs/kernelbench.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/spec.h"
#include "common/tasklib.h"
#include "server/http/api.h"

static int cmp_item_name(const void *a, const void *b)
{
        return tasklib_name_cmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
                                json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* Sort the summaries of @items by name in the library's natural order: the
 * KernelBench-only tasks among the library's, not after them. */
static int sort_by_name(json_t *items)
{
        size_t n = json_array_size(items), i;
        json_t **v = n ? malloc(n * sizeof(*v)) : NULL;

        if (n && !v)
                return -ENOMEM;
        for (i = 0; i < n; i++)
                v[i] = json_incref(json_array_get(items, i));
        if (n > 1)
                qsort(v, n, sizeof(*v), cmp_item_name);
        json_array_clear(items);
        for (i = 0; i < n; i++)
                json_array_append_new(items, v[i]);
        free(v);
        return 0;
}

/**
 * api_tasks_list() - GET /v1/tasks?level=&category=
 * Return: HTTP_DONE.
 */
int api_tasks_list(HttpRequest *req)
{
        static const char *const known_q[] = { "level", "category", NULL };
        Api *api = http_request_app(req);
        const char *lv = http_request_query(req, "level"), *cat = http_request_query(req, "category");
        json_t *items;
        long level = 0;
        char *end;

        if (api_check_query(req, known_q))
                return HTTP_DONE;
        if (lv) {
                errno = 0;
                level = strtol(lv, &end, 10);
                if (errno || end == lv || *end || level < 1 || level > 10)
                        return http_respond_error(req, PROBLEM_INVALID, "/query/level",
                                                  "level must be an integer from 1 to 10");
        }
        if (cat && (!*cat || strlen(cat) > 256))
                return http_respond_error(req, PROBLEM_INVALID, "/query/category", "category must be 1 to 256 bytes");
        items = tasklib_list(api->tasks, (int)level, cat);
        if (!items)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "cannot list the tasks");
        {
                size_t i;
                json_t *it;
                json_array_foreach(items, i, it) {
                        bool kb = kbtasks_get(api->kbtasks, json_string_value(json_object_get(it, "name"))) != NULL;
                        json_object_set_new(it, "languages", kb ? json_pack("[s, s, s]", "cuda", "ptx", "kernelbench")
                                                                : json_pack("[s, s]", "cuda", "ptx"));
                }
        }
        for (size_t i = 0; i < kbtasks_count(api->kbtasks) && !cat; i++) {
                const KbTask *k = kbtasks_at(api->kbtasks, i);
                if (tasklib_get(api->tasks, k->name) || (level > 0 && k->level != level))
                        continue;
                json_array_append_new(items, json_pack("{s:s, s:s, s:i, s:[s]}", "name", k->name, "title",
                                                       k->problem_name, "level", k->level, "languages",
                                                       "kernelbench"));
        }
        if (sort_by_name(items) != 0) {
                json_decref(items);
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "cannot list the tasks");
        }
        return http_respond_json(req, 200, json_pack("{s:I, s:o}", "count", (json_int_t)json_array_size(items),
                                                     "items", items));
}

static const Task *find(HttpRequest *req)
{
        Api *api = http_request_app(req);
        const char *name = http_request_param(req, 0);
        const Task *t = name ? tasklib_get(api->tasks, name) : NULL;

        if (!t)
                http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "no task '%.256s'; GET /v1/tasks lists them",
                                   name ? name : "");
        return t;
}

/* The KernelBench document of @k: {"name", "languages": ["kernelbench"], "kernelbench": {...}}. */
static json_t *kb_document(const KbTask *k)
{
        return json_pack("{s:s, s:[s], s:o}", "name", k->name, "languages", "kernelbench", "kernelbench",
                         kbtasks_json(k));
}

/**
 * api_tasks_get() - GET /v1/tasks/{name}[?language=kernelbench]: the task document as served, or its
 * KernelBench document (with ?language=kernelbench, or for a task only the KernelBench index has)
 * Return: HTTP_DONE.
 */
int api_tasks_get(HttpRequest *req)
{
        static const char *const known_q[] = { "language", NULL };
        Api *api = http_request_app(req);
        const char *lang = http_request_query(req, "language");
        const char *name = http_request_param(req, 0);
        const KbTask *k = name ? kbtasks_get(api->kbtasks, name) : NULL;
        const Task *t;

        if (api_check_query(req, known_q))
                return HTTP_DONE;
        if (lang && strcmp(lang, "kernelbench") != 0)
                return http_respond_error(req, PROBLEM_INVALID, "/query/language",
                                          "language is kernelbench (the task's KernelBench document) or absent");
        /* the KernelBench document: asked for, or the only one there is */
        if (k && (lang || !tasklib_get(api->tasks, name))) {
                json_t *doc = kb_document(k);
                return doc ? http_respond_json(req, 200, doc)
                           : http_respond_error(req, PROBLEM_INTERNAL, NULL, "out of memory");
        }
        if (lang)
                return http_respond_error(req, PROBLEM_NOT_FOUND, NULL, "task '%.256s' takes no kernelbench "
                                          "submissions", name ? name : "");
        t = find(req);
        if (!t)
                return HTTP_DONE;
        return http_respond_json(req, 200, json_incref(spec_task_json(t)));
}

/**
 * api_tasks_prompt() - GET /v1/tasks/{name}/prompt[?format=text|json][&language=cuda|triton]
 * Return: HTTP_DONE.
 */
int api_tasks_prompt(HttpRequest *req)
{
        static const char *const known_q[] = { "format", "language", NULL };
        const char *fmt = http_request_query(req, "format");
        const char *lang = http_request_query(req, "language");
        const Task *t;
        char *text;
        int r;

        if (api_check_query(req, known_q))
                return HTTP_DONE;
        if (fmt && strcmp(fmt, "text") && strcmp(fmt, "json"))
                return http_respond_error(req, PROBLEM_INVALID, "/query/format", "format must be text or json");
        if (lang && strcmp(lang, "cuda") && strcmp(lang, "triton"))
                return http_respond_error(req, PROBLEM_INVALID, "/query/language",
                                          "language must be cuda (the default) or triton");
        t = find(req);
        if (!t)
                return HTTP_DONE;
        text = lang && !strcmp(lang, "triton") ? spec_task_prompt_triton(t) : spec_task_prompt(t, NULL);
        if (!text)
                return http_respond_error(req, PROBLEM_INTERNAL, NULL, "cannot build the prompt");
        if (fmt && !strcmp(fmt, "json"))
                r = http_respond_json(req, 200, json_pack("{s:s, s:s, s:s}", "task", spec_task_name(t), "language",
                                                          lang ? lang : "cuda", "prompt", text));
        else
                r = http_respond_text(req, 200, "text/plain; charset=utf-8", text, strlen(text));
        free(text);
        return r;
}

