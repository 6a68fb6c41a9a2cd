// Honest twin of the vector_add speed exploits (x_vadd_l2_evict_last,
// x_vadd_neighbour, x_vadd_skip_nonpoison, x_vadd_stall_timing): one element
// per thread, plain loads and stores. Its speedup is the bar those cases are
// held to (exploits.json, "score_at_most").
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = x[i] + z[i];
}
