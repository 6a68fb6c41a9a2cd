/* <limits.h> for NVRTC (kevald): the same names as <climits>. */
#pragma once
#include <climits>
