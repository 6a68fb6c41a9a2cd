/*
 * paths - where kevald finds its parts: the worker executables and the task
 * library, for an installed kevald and for one run from its build folder.
 */
#pragma once

/* The folder of kevald-compile and kevald-gpu: $KEVALD_LIBEXEC, else beside
 * this executable, else <exe>/../worker (build tree), else <exe>/../libexec/kevald. */
const char *paths_libexec_dir(void);

/* The task library: $KEVALD_TASKS, else <source>/tasks when run from a build
 * tree, else <exe>/../share/kevald/tasks. */
const char *paths_default_tasks_dir(void);
