/*
 * <cuda.h> for NVRTC (kevald): empty. The driver API is host code; what a
 * kernel needs of CUDA, NVRTC declares itself. Kernels written for nvcc
 * often include it out of habit.
 */
#pragma once
