#include <utility>
#include <cfloat>

__device__ std::pair<float, int> better(std::pair<float, int> a, std::pair<float, int> b) {
    return (b.first > a.first || (b.first == a.first && b.second < a.second)) ? b : a;
}

extern "C" __global__ void max_with_index(const float* x, float* vmax, int* imax, int n) {
    std::pair<float, int> best = std::make_pair(-FLT_MAX, -1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) best = better(best, std::make_pair(x[i], i));
    for (int o = 16; o > 0; o /= 2) {
        std::pair<float, int> other(__shfl_down_sync(0xffffffff, best.first, o), __shfl_down_sync(0xffffffff, best.second, o));
        best = better(best, other);
    }
    if (threadIdx.x == 0) { *vmax = best.first; *imax = best.second; }
}
