// Reference for KernelBench level 1 problem 90_cumprod: y = torch.cumprod(x, dim=1).
// One block of 256 threads per row; the row is read in chunks of
// 256 * 4 * UNROLL elements, in forward scan order. Each thread owns 4
// consecutive scan positions of each of the chunk's UNROLL tiles and loads
// all of them (float4 where the row is 16-byte aligned, else scalars) before
// scanning any: the loads of a chunk are in flight together (as floats, the
// mask applied; x * 0 and x * 1 are exact). Per tile: the thread combines its
// 4 elements in double, a warp shuffle scan and a scan of
// the 8 warp totals give each thread its offset, and a carry moves from tile
// to tile. Deterministic, and exact to double precision.
#define THREADS 256
#define WARPS (THREADS / 32)
#define UNROLL 4
#define REVERSE 0

/* The 4 elements at scan positions j .. j+3 (identity past the row's end). */
__device__ static void load4(const float* __restrict__ xr, long long L, long long j,
                             float* e)
{
        long long p0 = REVERSE ? L - 4 - j : j;   /* lowest memory index of the 4 */
        if (j + 4 <= L && (((unsigned long long)(xr + p0)) & 15) == 0) {
                float4 v = *(const float4*)(xr + p0);
                float a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int k = 0; k < 4; k++)
                        e[k] = a[REVERSE ? 3 - k : k];
        } else {
#pragma unroll
                for (int k = 0; k < 4; k++) {
                        long long i = REVERSE ? L - 1 - (j + k) : j + k;
                        e[k] = j + k < L ? xr[i] : 1.0f;
                }
        }
}

/* Write the 4 results for scan positions j .. j+3 (those inside the row). */
__device__ static void store4(float* __restrict__ yr, long long L, long long j, const float* r)
{
        long long p0 = REVERSE ? L - 4 - j : j;
        if (j + 4 <= L && (((unsigned long long)(yr + p0)) & 15) == 0) {
                *(float4*)(yr + p0) = REVERSE ? make_float4(r[3], r[2], r[1], r[0])
                                              : make_float4(r[0], r[1], r[2], r[3]);
        } else {
#pragma unroll
                for (int k = 0; k < 4; k++)
                        if (j + k < L)
                                yr[REVERSE ? L - 1 - (j + k) : j + k] = r[k];
        }
}

extern "C" __global__ void __launch_bounds__(THREADS) cumprod_ref(const float* __restrict__ x,
        float* __restrict__ y, long long L)
{
        __shared__ double warp_tot[2][WARPS];
        unsigned long long row = (unsigned long long)blockIdx.x * L;
        const float* xr = x + row;
        float* yr = y + row;
        int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        double carry = 1.0;
        int parity = 0;
        for (long long c0 = 0; c0 < L; c0 += (long long)THREADS * 4 * UNROLL) {
                float e[UNROLL][4];
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                        load4(xr, L, c0 + ((long long)u * THREADS + threadIdx.x) * 4, e[u]);
#pragma unroll
                for (int u = 0; u < UNROLL; u++) {
                        long long j = c0 + ((long long)u * THREADS + threadIdx.x) * 4;
                        if (c0 + (long long)u * THREADS * 4 >= L)
                                continue;               /* uniform across the block */
                        double local = (double)e[u][0] * (double)e[u][1] * (double)e[u][2] *
                                       (double)e[u][3];
                        double incl = local;            /* inclusive scan over the warp */
#pragma unroll
                        for (int o = 1; o < 32; o <<= 1) {
                                double v = __shfl_up_sync(0xffffffffu, incl, o);
                                if (lane >= o)
                                        incl = v * incl;
                        }
                        if (lane == 31)
                                warp_tot[parity][warp] = incl;
                        __syncthreads();
                        double before = carry, total = carry;
                        for (int w = 0; w < WARPS; w++) {
                                if (w < warp)
                                        before = before * warp_tot[parity][w];
                                total = total * warp_tot[parity][w];
                        }
                        double excl = __shfl_up_sync(0xffffffffu, incl, 1);
                        double run = lane > 0 ? before * excl : before;
                        float r[4];
#pragma unroll
                        for (int k = 0; k < 4; k++) {
                                run = run * (double)e[u][k];
                                r[k] = (float)run;
                        }
                        store4(yr, L, j, r);
                        carry = total;
                        parity ^= 1;
                }
        }
}
