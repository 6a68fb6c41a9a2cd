/*
 * std::min, std::max, std::clamp and std::swap for NVRTC (kevald), small
 * enough to come with every compile: libcu++'s own <cuda/std/...> versions
 * cost about 0.4 s of front-end time each compile. The CUDA math library's
 * min and max overloads (global, mixed types too) are the same functions
 * under std; the templates serve other types and std::min<int>(a, b).
 */
#pragma once

namespace std {
using ::min;
using ::max;
template <class T> __host__ __device__ constexpr const T &min(const T &a, const T &b) { return b < a ? b : a; }
template <class T> __host__ __device__ constexpr const T &max(const T &a, const T &b) { return a < b ? b : a; }
template <class T, class Compare>
__host__ __device__ constexpr const T &min(const T &a, const T &b, Compare comp) { return comp(b, a) ? b : a; }
template <class T, class Compare>
__host__ __device__ constexpr const T &max(const T &a, const T &b, Compare comp) { return comp(a, b) ? b : a; }
template <class T>
__host__ __device__ constexpr const T &clamp(const T &v, const T &lo, const T &hi) { return v < lo ? lo : hi < v ? hi : v; }
template <class T> __host__ __device__ void swap(T &a, T &b)
{
        T t = static_cast<T &&>(a);
        a = static_cast<T &&>(b);
        b = static_cast<T &&>(t);
}
}
