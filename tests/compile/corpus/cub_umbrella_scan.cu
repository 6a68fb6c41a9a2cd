#include <cub/cub.cuh>
#include <cuda_runtime.h>

// per-block exclusive prefix sum of 4 items per thread
template <int BLOCK_THREADS, int ITEMS>
__device__ void block_prefix_sum(const int* d_in, int* d_out) {
    typedef cub::BlockLoad<int, BLOCK_THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE> BlockLoadT;
    typedef cub::BlockStore<int, BLOCK_THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE> BlockStoreT;
    typedef cub::BlockScan<int, BLOCK_THREADS> BlockScanT;
    __shared__ union {
        typename BlockLoadT::TempStorage load;
        typename BlockStoreT::TempStorage store;
        typename BlockScanT::TempStorage scan;
    } temp_storage;
    int data[ITEMS];
    int offset = blockIdx.x * BLOCK_THREADS * ITEMS;
    BlockLoadT(temp_storage.load).Load(d_in + offset, data);
    __syncthreads();
    BlockScanT(temp_storage.scan).ExclusiveSum(data, data);
    __syncthreads();
    BlockStoreT(temp_storage.store).Store(d_out + offset, data);
}

extern "C" __global__ void prefix_sum_128x4(const int* d_in, int* d_out) {
    block_prefix_sum<128, 4>(d_in, d_out);
}
