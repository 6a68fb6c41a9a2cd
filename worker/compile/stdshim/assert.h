/* <assert.h> for NVRTC (kevald): the same as <cassert>. */
#pragma once
#include <cassert>
