/*
 * kevald_math.h - the math part of <cmath> and <math.h> for NVRTC (kevald),
 * which kevald_prelude.h also brings to every compile. The C math macros,
 * and the CUDA math library (which NVRTC declares in the global namespace,
 * float overloads included) made visible in namespace std, as a host
 * <cmath> does: std::sqrt is ::sqrt, so `using namespace std;` makes no
 * call ambiguous. std::min and std::max come along, as with host standard
 * libraries. INFINITY and NAN are left to libcu++ in a source that includes
 * it (__KEVALD_LIBCUDACXX, set by the compile worker): its <cuda/std/cmath>
 * defines them under NVRTC without a guard; where such a source also names
 * them (__KEVALD_LIBCUDACXX == 2), that header is included here.
 */
#pragma once
#include <kevald_algorithm.h>
#if defined(__KEVALD_LIBCUDACXX) && __KEVALD_LIBCUDACXX > 1
#include <cuda/std/cmath>
#endif

#if !defined(INFINITY) && !defined(__KEVALD_LIBCUDACXX)
#define INFINITY (1.0f / 0.0f)
#endif
#if !defined(NAN) && !defined(__KEVALD_LIBCUDACXX)
#define NAN (0.0f / 0.0f)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (1.0f / 0.0f)
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (1.0 / 0.0)
#endif
#ifndef HUGE_VALL
#define HUGE_VALL (1.0L / 0.0L)
#endif
#ifndef M_E
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef FP_NAN
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#endif

namespace std {
using ::abs; using ::fabs; using ::fabsf; using ::fmod; using ::fmodf;
using ::remainder; using ::remainderf; using ::remquo; using ::remquof;
using ::fma; using ::fmaf; using ::fmax; using ::fmaxf; using ::fmin; using ::fminf;
using ::fdim; using ::fdimf; using ::nan; using ::nanf;
using ::exp; using ::expf; using ::exp2; using ::exp2f; using ::expm1; using ::expm1f;
using ::log; using ::logf; using ::log10; using ::log10f; using ::log2; using ::log2f;
using ::log1p; using ::log1pf;
using ::pow; using ::powf; using ::sqrt; using ::sqrtf; using ::cbrt; using ::cbrtf;
using ::hypot; using ::hypotf;
using ::sin; using ::sinf; using ::cos; using ::cosf; using ::tan; using ::tanf;
using ::asin; using ::asinf; using ::acos; using ::acosf; using ::atan; using ::atanf;
using ::atan2; using ::atan2f;
using ::sinh; using ::sinhf; using ::cosh; using ::coshf; using ::tanh; using ::tanhf;
using ::asinh; using ::asinhf; using ::acosh; using ::acoshf; using ::atanh; using ::atanhf;
using ::erf; using ::erff; using ::erfc; using ::erfcf;
using ::tgamma; using ::tgammaf; using ::lgamma; using ::lgammaf;
using ::ceil; using ::ceilf; using ::floor; using ::floorf; using ::trunc; using ::truncf;
using ::round; using ::roundf; using ::lround; using ::lroundf; using ::llround; using ::llroundf;
using ::nearbyint; using ::nearbyintf; using ::rint; using ::rintf;
using ::lrint; using ::lrintf; using ::llrint; using ::llrintf;
using ::frexp; using ::frexpf; using ::ldexp; using ::ldexpf; using ::modf; using ::modff;
using ::scalbn; using ::scalbnf; using ::scalbln; using ::scalblnf;
using ::ilogb; using ::ilogbf; using ::logb; using ::logbf;
using ::nextafter; using ::nextafterf; using ::copysign; using ::copysignf;
using ::isfinite; using ::isinf; using ::isnan; using ::signbit;
}
