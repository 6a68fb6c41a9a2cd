/*
 * log - see log.h. One write(2) per line so that lines from threads and
 * child processes sharing standard error do not interleave.
 */
#include "common/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int log_level_current = LOG_LEVEL_INFO;
static char log_ident[32] = "kevald";

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(const char *ident, LogLevel level)
{
        if (ident)
                snprintf(log_ident, sizeof(log_ident), "%s", ident);
        log_level_current = level;
}

/**
 * log_level_parse() - map "error", "warn", "info" or "debug" to a level
 * Return: 0, or -EINVAL for an unknown name (ret_level untouched).
 */
int log_level_parse(const char *name, LogLevel *ret_level)
{
        for (int i = 0; i < 4; i++)
                if (strcmp(name, level_names[i]) == 0) {
                        *ret_level = (LogLevel)i;
                        return 0;
                }
        return -22;
}

void log_emit(LogLevel level, const char *fmt, ...)
{
        char line[4096];
        struct timespec ts;
        struct tm tm;
        int n;
        va_list ap;

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld %s[%d] %s: ", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, log_ident, (int)getpid(), level_names[level]);
        va_start(ap, fmt);
        n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        va_end(ap);
        if (n > (int)sizeof(line) - 2)
                n = (int)sizeof(line) - 2;
        line[n++] = '\n';
        (void)!write(STDERR_FILENO, line, (size_t)n);
}
