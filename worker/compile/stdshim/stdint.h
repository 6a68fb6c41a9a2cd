/* <stdint.h> for NVRTC (kevald): the same names as <cstdint>. */
#pragma once
#include <cstdint>
