/* SPDX-License-Identifier: MIT */
/* Helpers of the gpu suites: the stand-in driver, and the log captured so a
 * test can assert what an error message says. */
#ifndef RW_TESTS_GPU_GTEST_H
#define RW_TESTS_GPU_GTEST_H

#include <stddef.h>

/* Points RAILWIRE_CUDA_LIBRARY at the stand-in built with the tests, or at
 * RAILWIRE_TEST_STANDIN when set (a staged copy, e.g. in the soft-RoCE VM).
 * Call before anything loads the driver. */
void gt_use_standin(void);

/* Starts capturing railwire's log (every level); replaces what was kept. */
void gt_log_capture(void);
/* 1 if a captured line contains `needle`. */
int gt_log_has(const char *needle);
/* Everything captured (static buffer, for failure messages). */
const char *gt_log_text(void);

/* The stand-in's test controls (dlsym on the loaded stand-in; NULL if it
 * is not loaded). */
void *gt_standin_sym(const char *name);

#endif
