// The finiteness check of a run (bookkeeping.py, Bookkeeping.check_finite): one launch per array,
// one read of the flag for all of them.  flag = 1 when a value in the first `columns` of any row
// of `row` values is not finite (the positions' rows carry the type in their fourth column).
#ifndef real_t
#define real_t double
#endif

extern "C" __global__ void flag_nonfinite(const real_t* __restrict__ values, long long count, int row,
                                          int columns, int* __restrict__ flag)
{
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < count;
         t += (long long)gridDim.x * blockDim.x)
        if ((int)(t % row) < columns && !isfinite(values[t])) *flag = 1;
}
