// Trick: +Inf everywhere, reading nothing. Aimed at tolerance checks of
// the form |got - want| <= atol + rtol * |got| (or max(|got|, |want|)),
// which Inf satisfies (Inf <= Inf), and at checks that only count NaNs.
// What stops it: the relative term uses the reference's value, and any
// NaN/Inf that the reference does not have is a disagreement of its own.
// Expect "incorrect", mismatch, every element (1048576) a NaN/Inf
// disagreement.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = __int_as_float(0x7f800000);
}
