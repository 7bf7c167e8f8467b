// Whole rows of per-atom arrays copied into and out of packed messages (spatial domains: the migrating
// atoms and the ghosts, pycumd/parallel/domains.py).  A packed message is a (rows, words) array of
// 32-bit words holding, side by side, a row of each of several per-atom arrays (every row of theirs is
// a whole number of words: float32/float64 coordinates, int32 types and images, int64 ids).
// One thread per word.

// out[(out_first + r) * out_words + out_column + w] = src[rows[r] * row_words + w], r < n_rows, w < row_words
extern "C" __global__ void gather_row_words(const unsigned int* __restrict__ src, const int* __restrict__ rows,
                                            int n_rows, int row_words, unsigned int* __restrict__ out,
                                            int out_words, int out_column, int out_first)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (long long)n_rows * row_words) return;
    const int r = (int)(k / row_words), w = (int)(k % row_words);
    out[(long long)(out_first + r) * out_words + out_column + w] = src[(long long)rows[r] * row_words + w];
}

// dst[(dst_first + r) * row_words + w] = packed[r * packed_words + packed_column + w], r < n_rows, w < row_words
extern "C" __global__ void scatter_row_words(const unsigned int* __restrict__ packed, int n_rows, int packed_words,
                                             int packed_column, int row_words, unsigned int* __restrict__ dst,
                                             int dst_first)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (long long)n_rows * row_words) return;
    const int r = (int)(k / row_words), w = (int)(k % row_words);
    dst[(long long)(dst_first + r) * row_words + w] = packed[(long long)r * packed_words + packed_column + w];
}

#ifndef real_t
#define real_t float          // the positions' type (pycumd/parallel/domains.py compiles it for the state's)
#endif

// The migration decision of one decomposed direction for each owned row i (rows of `width` real_t):
// the domain c = clamp(floor(x_dim * scale), 0, p - 1) of its position (scale = p / L, the same
// float64 arithmetic as the CPU's), away = c != own (and the row still alive: not gone along an
// earlier direction), to_low / to_high = away to the low / high face neighbour (low first: with two
// domains both faces lead to the other), stays = alive and not away.
extern "C" __global__ void migration_flags(const real_t* __restrict__ pos, int n, int width, int dim, double scale,
                                           int p, int own, int low, int high, const bool* __restrict__ alive,
                                           bool* __restrict__ to_low, bool* __restrict__ to_high,
                                           bool* __restrict__ away, bool* __restrict__ stays)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long c = (long long)floor((double)pos[(long long)i * width + dim] * scale);
    c = c < 0 ? 0 : (c > p - 1 ? p - 1 : c);
    const bool live = alive == nullptr || alive[i];
    const bool gone = live && c != own;
    const bool lo = gone && c == low;
    to_low[i] = lo;
    to_high[i] = gone && c == high && !lo;
    away[i] = gone;
    stays[i] = live && !gone;
}
