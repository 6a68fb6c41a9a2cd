/* <stddef.h> for NVRTC (kevald): the same names as <cstddef>. */
#pragma once
#include <cstddef>
