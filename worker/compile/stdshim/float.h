/* <float.h> for NVRTC (kevald): the same names as <cfloat>. */
#pragma once
#include <cfloat>
