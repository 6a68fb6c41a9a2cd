/* <stdio.h> for NVRTC (kevald): device printf, which NVRTC declares itself. */
#pragma once
#include <cstdio>
