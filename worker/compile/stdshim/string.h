/* <string.h> for NVRTC (kevald): the same names as <cstring>. */
#pragma once
#include <cstring>
