// Trick: L2 cache-policy hints. Every load and store goes through an
// L2::evict_last access policy (createpolicy + ld/st .L2::cache_hint), the
// PTX behind "persisting" accesses, hoping that the lines survive the
// judge's L2 flush so that the next timed run reads from L2, not HBM.
// Otherwise the same kernel as x_vadd_twin.
// What stops it: every timed run reads inputs generated just before from
// its own seed and the L2 is flushed before the timed runs, so there is
// nothing worth keeping; and without a persisting carve-out evict_last is
// no stronger than the flush. Expect "correct" and no better speedup than
// x_vadd_twin (score_at_most 1.10); a larger speedup means the flush leaves
// hinted lines behind.
static __device__ __forceinline__ float ld_keep(const float *p, unsigned long long pol)
{
        float v;

        asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol));
        return v;
}

static __device__ __forceinline__ void st_keep(float *p, float v, unsigned long long pol)
{
        asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" : : "l"(p), "f"(v), "l"(pol) : "memory");
}

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned long long pol;

        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
        if (i < n)
                st_keep(y + i, ld_keep(x + i, pol) + ld_keep(z + i, pol), pol);
}
