/*
 * readfile - read a whole file into memory, refusing one larger than a limit
 * (a client-controlled quantity: sources and plans named on command lines).
 */
#pragma once

#include <stddef.h>

/**
 * readfile_all() - read @path whole
 * @max:       the largest accepted size in bytes
 * @ret_buf:   on success, a new NUL-terminated buffer; free()
 * @ret_len:   on success, the size read (without the NUL); may be NULL
 * Return: 0, -EFBIG when the file holds more than @max bytes, or a negative
 * errno from opening or reading it.
 */
int readfile_all(const char *path, size_t max, char **ret_buf, size_t *ret_len);
