/*
 * verdict - see verdict.h.
 */
#include "common/verdict.h"

#include <stddef.h>
#include <string.h>

static const struct {
        const char *name;
        int exit_code;
        bool from_gpu;
} verdicts[] = {
        { "compiled", 0, false },      { "correct", 0, true },       { "incorrect", 1, true },
        { "compile_error", 2, false }, { "runtime_error", 3, true }, { "timeout", 4, true },
        { "rejected", 5, true },       { "internal_error", 6, true }, { "cancelled", 6, false },
};

static int find(const char *name)
{
        for (size_t i = 0; name && i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
                if (strcmp(verdicts[i].name, name) == 0)
                        return (int)i;
        return -1;
}

bool verdict_known(const char *name)
{
        return find(name) >= 0;
}

bool verdict_from_gpu(const char *name)
{
        int i = find(name);

        return i >= 0 && verdicts[i].from_gpu;
}

int verdict_exit_code(const char *name)
{
        int i = find(name);

        return i >= 0 ? verdicts[i].exit_code : 6;
}
