/* <stdlib.h> for NVRTC (kevald): the same names as <cstdlib>. */
#pragma once
#include <cstdlib>
