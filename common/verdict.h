/*
 * verdict - the verdicts a submission ends with: one table for every part
 * that names them (the API's filters, the dispatcher's check of a GPU
 * RESULT, the CLI's exit status). A verdict is stored and sent as its name.
 *
 *   compiled        mode compile: the candidate compiled and its plan checks
 *   correct         matched the reference on every shape set (then timed)
 *   incorrect       ran, and did not match
 *   compile_error   did not compile
 *   runtime_error   faulted on the GPU (fenced, or a CUDA error)
 *   timeout         did not finish within its launch or job limit
 *   rejected        the candidate breaks a rule (its plan, options, size...)
 *   internal_error  kevald's fault, not the kernel's
 *   cancelled       cancelled before it ran
 */
#ifndef KEVALD_COMMON_VERDICT_H
#define KEVALD_COMMON_VERDICT_H

#include <stdbool.h>

/* Every verdict name, in the order above, comma-separated: for error messages. */
#define VERDICT_NAMES "compiled, correct, incorrect, compile_error, runtime_error, timeout, rejected, " \
                      "internal_error, cancelled"

/* Is @name a verdict? */
bool verdict_known(const char *name);

/* May a GPU worker's RESULT carry verdict @name? (compiled, compile_error
 * and cancelled are decided before a job reaches a GPU.) */
bool verdict_from_gpu(const char *name);

/*
 * The exit status of a command that ends in verdict @name (docs/clients.md):
 * 0 correct or compiled, 1 incorrect, 2 compile_error, 3 runtime_error,
 * 4 timeout, 5 rejected, 6 internal_error, cancelled or an unknown name.
 */
int verdict_exit_code(const char *name);

#endif
