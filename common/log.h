/*
 * log - leveled, printf-checked logging to standard error.
 *
 * Every process of kevald logs through this module. The level is tested
 * before any formatting, so a disabled log_debug() costs one comparison.
 * Lines read "<ident> <level>: <message>"; messages follow the house form
 * "module: what failed: why", with user strings quoted.
 */
#pragma once

#include <stdarg.h>

typedef enum {
        LOG_LEVEL_ERROR = 0,
        LOG_LEVEL_WARN = 1,
        LOG_LEVEL_INFO = 2,
        LOG_LEVEL_DEBUG = 3,
} LogLevel;

extern int log_level_current;

void log_init(const char *ident, LogLevel level);
int log_level_parse(const char *name, LogLevel *ret_level);
void log_emit(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_at(lvl, ...)                                                        \
        do {                                                                    \
                if ((int)(lvl) <= log_level_current)                            \
                        log_emit((lvl), __VA_ARGS__);                           \
        } while (0)
#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)
