/* <math.h> for NVRTC (kevald): the same names as <cmath>. */
#pragma once
#include <cmath>
