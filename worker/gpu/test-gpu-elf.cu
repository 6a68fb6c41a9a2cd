// Device variables of every kind, for test-gpu-elf (compiled with nvcc -cubin at build time).
__device__ int x = 5; __device__ float y[3] = {1,2,3}; static __device__ double z[10]; __device__ char w[100]; extern "C" __global__ void k(int *o){ o[0]=x+(int)y[1]+(int)z[2]+w[3]; z[1]=1; w[2]=1;}
