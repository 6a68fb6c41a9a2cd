// Does nothing.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
}
