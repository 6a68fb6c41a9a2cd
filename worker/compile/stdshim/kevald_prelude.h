/*
 * kevald_prelude.h - pre-included into every CUDA C++ submission (NVRTC
 * -include). nvcc includes the host's <cmath> and <climits> behind every
 * .cu file (through cuda_runtime.h), so kernels written for nvcc use
 * INFINITY, NAN, M_PI, INT_MAX and std::sqrt without an #include; NVRTC
 * has no host headers, and this file gives them the same names.
 */
#pragma once
#include <kevald_math.h>
#include <climits>
