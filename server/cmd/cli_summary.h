/*
 * cli_summary - the human summary of a submission (see cli_summary.c).
 */
#pragma once

#include <jansson.h>
#include <stdio.h>

void cli_summary_print(FILE *f, json_t *sub);
