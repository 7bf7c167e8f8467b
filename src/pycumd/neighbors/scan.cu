// Prefix sums (scans) on the GPU: three algorithms, one element type per compiled module.
//
//   inclusive  y_i = x_0 + x_1 + ... + x_i
//   exclusive  y_i = x_0 + ... + x_{i-1},   y_0 = 0
//
// SCAN_DTYPE selects the element type (set with -DSCAN_DTYPE=k by the Python launcher):
//   0 uint32, 1 int32, 2 int64, 3 float32, 4 float64.
// Integers are summed in the unsigned type of the same width, so sums wrap modulo 2^32 or
// 2^64 exactly as numpy.cumsum(x, dtype=x.dtype) does (two's complement bits are identical).
// Every kernel may run in place (in == out): each element is read before it is overwritten,
// by the same thread, and no other thread reads it.
//
// Kernels
//   scan_hillis_steele   one block scans HS_THREADS elements with a double-buffered
//                        Hillis-Steele scan (O(n log n) additions), writes its block total.
//   scan_blelloch        one block scans 2*BL_THREADS elements with the work-efficient
//                        balanced-tree scan (up-sweep, down-sweep; O(n) additions), shared
//                        memory padded by one word per 32 to avoid bank conflicts.
//   scan_add_offsets     y_i += offsets[i / elems_per_block]: adds scanned block totals back.
//   scan_lookback        single pass with decoupled look-back (Merrill & Garland 2016): each
//                        tile publishes its aggregate, then its inclusive prefix, and looks
//                        back over its predecessors' published values; every element is read
//                        once and written once.

#ifndef SCAN_DTYPE
#define SCAN_DTYPE 0
#endif

#if SCAN_DTYPE == 0 || SCAN_DTYPE == 1
typedef unsigned int A;       // arithmetic type (wrapping for int32 too)
#elif SCAN_DTYPE == 2
typedef unsigned long long A;
#elif SCAN_DTYPE == 3
typedef float A;
#elif SCAN_DTYPE == 4
typedef double A;
#else
#error "SCAN_DTYPE must be 0..4"
#endif

#ifndef HS_THREADS
#define HS_THREADS 512
#endif
#ifndef BL_THREADS
#define BL_THREADS 512
#endif
#ifndef LB_THREADS
#define LB_THREADS 256
#endif
#ifndef LB_ROUNDS
#define LB_ROUNDS 4             // 16-byte vectors per thread per tile
#endif

#define FULL_MASK 0xffffffffu
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(i) ((i) >> LOG_NUM_BANKS)

typedef unsigned long long u64;

// ---------------------------------------------------------------------------------------
// Double-buffered (Hillis-Steele) block scan.
// After step d: buf[i] = sum of x_j for j in (i - 2^d, i].
extern "C" __global__ void __launch_bounds__(HS_THREADS)
scan_hillis_steele(const A* in, A* out, u64 n, A* block_sums, int exclusive)
{
    __shared__ A buf[2][HS_THREADS];
    const unsigned int t = threadIdx.x;
    const u64 i = (u64)blockIdx.x * HS_THREADS + t;
    int cur = 0;
    buf[cur][t] = (i < n) ? in[i] : A(0);
    __syncthreads();
    for (unsigned int offset = 1; offset < HS_THREADS; offset <<= 1) {
        const int nxt = 1 - cur;
        buf[nxt][t] = (t >= offset) ? buf[cur][t] + buf[cur][t - offset] : buf[cur][t];
        cur = nxt;
        __syncthreads();
    }
    if (i < n) {
        out[i] = exclusive ? (t == 0 ? A(0) : buf[cur][t - 1]) : buf[cur][t];
    }
    if (t == HS_THREADS - 1) {
        block_sums[blockIdx.x] = buf[cur][t];
    }
}

// ---------------------------------------------------------------------------------------
// Work-efficient balanced-tree (Blelloch) block scan over 2*BL_THREADS elements.
// Up-sweep: s[k 2^{d+1} - 1] += s[k 2^{d+1} - 2^d - 1]; root cleared; down-sweep swaps and adds.
extern "C" __global__ void __launch_bounds__(BL_THREADS)
scan_blelloch(const A* in, A* out, u64 n, A* block_sums, int exclusive)
{
    const unsigned int M = 2 * BL_THREADS;
    __shared__ A s[2 * BL_THREADS + CONFLICT_FREE_OFFSET(2 * BL_THREADS)];
    const unsigned int t = threadIdx.x;
    const u64 base = (u64)blockIdx.x * M;
    const unsigned int ai = t, bi = t + BL_THREADS;
    const A xa = (base + ai < n) ? in[base + ai] : A(0);
    const A xb = (base + bi < n) ? in[base + bi] : A(0);
    s[ai + CONFLICT_FREE_OFFSET(ai)] = xa;
    s[bi + CONFLICT_FREE_OFFSET(bi)] = xb;

    unsigned int offset = 1;
    for (unsigned int d = M >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            unsigned int l = offset * (2 * t + 1) - 1;
            unsigned int h = offset * (2 * t + 2) - 1;
            l += CONFLICT_FREE_OFFSET(l);
            h += CONFLICT_FREE_OFFSET(h);
            s[h] += s[l];
        }
        offset <<= 1;
    }
    if (t == 0) {
        const unsigned int root = (M - 1) + CONFLICT_FREE_OFFSET(M - 1);
        block_sums[blockIdx.x] = s[root];
        s[root] = A(0);
    }
    for (unsigned int d = 1; d < M; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            unsigned int l = offset * (2 * t + 1) - 1;
            unsigned int h = offset * (2 * t + 2) - 1;
            l += CONFLICT_FREE_OFFSET(l);
            h += CONFLICT_FREE_OFFSET(h);
            const A v = s[l];
            s[l] = s[h];
            s[h] += v;
        }
    }
    __syncthreads();
    // s now holds the exclusive scan; the inclusive one adds the element itself.
    if (base + ai < n) {
        const A e = s[ai + CONFLICT_FREE_OFFSET(ai)];
        out[base + ai] = exclusive ? e : e + xa;
    }
    if (base + bi < n) {
        const A e = s[bi + CONFLICT_FREE_OFFSET(bi)];
        out[base + bi] = exclusive ? e : e + xb;
    }
}

// y_i += offsets[i / elems_per_block] for all i in [elems_per_block, n): block 0 has offset 0.
extern "C" __global__ void
scan_add_offsets(A* out, u64 n, const A* offsets, unsigned int elems_per_block)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x + elems_per_block;
    if (i < n) {
        out[i] += offsets[i / elems_per_block];
    }
}

// ---------------------------------------------------------------------------------------
// Single-pass scan with decoupled look-back.
//
// Tile = LB_THREADS threads x LB_ROUNDS 16-byte vectors.  Each warp owns a contiguous
// segment of 32 * LB_ROUNDS vectors; in round r lane l holds vector (r*32 + l) of its
// warp's segment, so every load and store instruction of a warp covers 512 contiguous bytes.
//
// Tile status: flag = (epoch << 2) | state, state 1 = aggregate of tile t published,
// state 2 = inclusive prefix (all tiles <= t) published.  32-bit elements pack flag and value
// into one 64-bit word status[t]; 64-bit elements keep values in agg[t] / incl[t].  A flag written
// by an earlier call carries an older epoch and reads as "not yet" (state 0), so the status
// array needs no clearing between calls.  Values are published before their flag with
// release semantics and read after the flag with acquire semantics.
// Tiles are processed in blockIdx order; a tile only waits on tiles with smaller index,
// which the hardware has already dispatched (the same assumption CUB's single-pass scan makes).
// Every call rewrites every tile's flag, so consecutive calls need only differ in epoch.  A call
// replayed from a CUDA graph cannot take a new epoch as an argument: with `epoch_cell` (not null)
// the epoch is read from epoch_cell[0], and the call's last block to finish (counted in
// epoch_cell[1]) switches it between 1 and 2 for the next call (CapturableScan: no memset of the
// status before each call).

#define VEC (16 / sizeof(A))
#define LB_ITEMS (VEC * LB_ROUNDS)
#define LB_WARPS (LB_THREADS / 32)
#define LB_TILE (LB_THREADS * LB_ITEMS)

struct __align__(16) Vec { A v[VEC]; };

__device__ __forceinline__ void store_release(unsigned int* p, unsigned int v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned int load_acquire(const unsigned int* p)
{
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Value loads that go to L2 (coherent point), never to a stale L1 line.
__device__ __forceinline__ A load_relaxed(const A* p)
{
#if SCAN_DTYPE <= 1 || SCAN_DTYPE == 3
    unsigned int v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
#if SCAN_DTYPE == 3
    return __uint_as_float(v);
#else
    return v;
#endif
#else
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
#if SCAN_DTYPE == 4
    return __longlong_as_double((long long)v);
#else
    return v;
#endif
#endif
}

__device__ __forceinline__ A warp_inclusive_scan(A x, unsigned int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const A y = __shfl_up_sync(FULL_MASK, x, o);
        if (lane >= (unsigned int)o) x += y;
    }
    return x;
}

__device__ __forceinline__ A warp_sum(A x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL_MASK, x, o);
    return x;
}


#if SCAN_DTYPE == 2 || SCAN_DTYPE == 4
#define LB_PACKED 0
#else
#define LB_PACKED 1
#endif

#if LB_PACKED
// 32-bit elements: status word and value share one 64-bit word, (value << 32) | flag,
// written and read whole (single-copy atomic), so no fence is needed.
__device__ __forceinline__ unsigned int a_bits(A v)
{
#if SCAN_DTYPE == 3
    return __float_as_uint(v);
#else
    return v;
#endif
}
__device__ __forceinline__ A bits_a(unsigned int b)
{
#if SCAN_DTYPE == 3
    return __uint_as_float(b);
#else
    return b;
#endif
}
__device__ __forceinline__ void publish(u64* status, A* unused_agg, A* unused_incl,
                                        unsigned int t, unsigned int flag, A v)
{
    const u64 w = ((u64)a_bits(v) << 32) | flag;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(status + t), "l"(w) : "memory");
}
__device__ __forceinline__ unsigned int poll(const u64* status, const A* agg, const A* incl,
                                             long long t, unsigned int epoch, A* v)
{
    u64 w;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(status + t) : "memory");
    const unsigned int f = (unsigned int)w;
    const unsigned int state = ((f >> 2) == epoch) ? (f & 3u) : 0u;
    *v = bits_a((unsigned int)(w >> 32));
    return state;
}
#else
// 64-bit elements: values in agg[] / incl[], published before their flag (release) and
// read after it (acquire); the flag is the low 32 bits of status[t].
__device__ __forceinline__ void publish(u64* status, A* agg, A* incl,
                                        unsigned int t, unsigned int flag, A v)
{
    if ((flag & 3u) == 2u) incl[t] = v; else agg[t] = v;
    store_release(reinterpret_cast<unsigned int*>(status + t), flag);
}
__device__ __forceinline__ unsigned int poll(const u64* status, const A* agg, const A* incl,
                                             long long t, unsigned int epoch, A* v)
{
    const unsigned int f = load_acquire(reinterpret_cast<const unsigned int*>(status + t));
    const unsigned int state = ((f >> 2) == epoch) ? (f & 3u) : 0u;
    if (state == 2) *v = load_relaxed(incl + t);
    else if (state == 1) *v = load_relaxed(agg + t);
    return state;
}
#endif

#ifndef LB_MIN_BLOCKS
#define LB_MIN_BLOCKS 1
#endif
// Waiting in the look-back (as CUB's delay constructors): with LB_UNIFORM_POLL the warp polls its
// 32 predecessors together and, while any has published nothing, sleeps LB_POLL_SLEEP_NS and polls
// those again (0: each lane spins on its own word); grids of >= LB_SLEEP_MIN_TILES tiles first
// sleep LB_PRE_SLEEP_NS after publishing their aggregate, giving the predecessors time to publish
// inclusive prefixes.  0 ns: no sleep.
#ifndef LB_UNIFORM_POLL
#define LB_UNIFORM_POLL 0
#endif
#ifndef LB_POLL_SLEEP_NS
#define LB_POLL_SLEEP_NS 0
#endif
#ifndef LB_PRE_SLEEP_NS
#define LB_PRE_SLEEP_NS 0
#endif
#ifndef LB_SLEEP_MIN_TILES
#define LB_SLEEP_MIN_TILES 500
#endif

extern "C" __global__ void __launch_bounds__(LB_THREADS, LB_MIN_BLOCKS)
scan_lookback(const A* in, A* out, u64 n, u64* status, A* agg, A* incl,
              unsigned int epoch, int exclusive, int aligned, unsigned int* epoch_cell)
{
    __shared__ A warp_prefix[LB_WARPS];
    if (epoch_cell != nullptr) epoch = *reinterpret_cast<volatile unsigned int*>(epoch_cell);
    const unsigned int tile = blockIdx.x;
    const unsigned int lane = threadIdx.x & 31;
    const unsigned int warp = threadIdx.x >> 5;
    const u64 tile_base = (u64)tile * LB_TILE;
    const u64 warp_base = tile_base + (u64)warp * (32 * LB_ITEMS);
    const bool full = aligned && (tile_base + LB_TILE <= n);

    A x[LB_ROUNDS][VEC];
    if (full) {
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) {
            const Vec v = *reinterpret_cast<const Vec*>(in + warp_base + (u64)(r * 32 + lane) * VEC);
#pragma unroll
            for (int j = 0; j < (int)VEC; ++j) x[r][j] = v.v[j];
        }
    } else {
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) {
#pragma unroll
            for (int j = 0; j < (int)VEC; ++j) {
                const u64 i = warp_base + (u64)(r * 32 + lane) * VEC + j;
                x[r][j] = (i < n) ? in[i] : A(0);
            }
        }
    }

    // Per round: thread sum of its vector, exclusive warp scan of those sums.
    A base[LB_ROUNDS];
    A carry = A(0);
#pragma unroll
    for (int r = 0; r < LB_ROUNDS; ++r) {
        A s = x[r][0];
#pragma unroll
        for (int j = 1; j < (int)VEC; ++j) s += x[r][j];
        const A inc = warp_inclusive_scan(s, lane);
        A exc = __shfl_up_sync(FULL_MASK, inc, 1);
        if (lane == 0) exc = A(0);
        base[r] = carry + exc;
        carry += __shfl_sync(FULL_MASK, inc, 31);
    }
    if (lane == 0) warp_prefix[warp] = carry;      // warp total for now
    __syncthreads();

    if (warp == 0) {
        const A wt = (lane < LB_WARPS) ? warp_prefix[lane] : A(0);
        const A winc = warp_inclusive_scan(wt, lane);
        A wexc = __shfl_up_sync(FULL_MASK, winc, 1);
        if (lane == 0) wexc = A(0);
        const A aggregate = __shfl_sync(FULL_MASK, winc, 31);

        A prefix = A(0);
        if (tile == 0) {
            if (lane == 0) publish(status, agg, incl, 0, (epoch << 2) | 2u, aggregate);
        } else {
            if (lane == 0) publish(status, agg, incl, tile, (epoch << 2) | 1u, aggregate);
            if (LB_PRE_SLEEP_NS > 0 && gridDim.x >= LB_SLEEP_MIN_TILES) __nanosleep(LB_PRE_SLEEP_NS);
            long long top = (long long)tile - 1;
            while (true) {
                const long long p = top - (long long)lane;
                unsigned int state = 2;            // before tile 0: nothing to add
                A v = A(0);
                if (LB_UNIFORM_POLL) {
                    if (p >= 0) state = poll(status, agg, incl, p, epoch, &v);
                    while (__any_sync(FULL_MASK, state == 0)) {
                        if (LB_POLL_SLEEP_NS > 0) __nanosleep(LB_POLL_SLEEP_NS);
                        if (state == 0) state = poll(status, agg, incl, p, epoch, &v);
                    }
                } else if (p >= 0) {
                    while ((state = poll(status, agg, incl, p, epoch, &v)) == 0) {
                        if (LB_POLL_SLEEP_NS > 0) __nanosleep(LB_POLL_SLEEP_NS);
                    }
                }
                const unsigned int inclusive_lanes = __ballot_sync(FULL_MASK, state == 2);
                if (inclusive_lanes) {
                    const unsigned int k = __ffs(inclusive_lanes) - 1;
                    prefix += warp_sum(lane <= k ? v : A(0));
                    break;
                }
                prefix += warp_sum(v);
                top -= 32;
            }
            if (lane == 0) publish(status, agg, incl, tile, (epoch << 2) | 2u, prefix + aggregate);
        }
        if (lane < LB_WARPS) warp_prefix[lane] = prefix + wexc;
    }
    __syncthreads();

    const A wp = warp_prefix[warp];
    if (full) {
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) {
            Vec v;
            A run = wp + base[r];
#pragma unroll
            for (int j = 0; j < (int)VEC; ++j) {
                if (exclusive) { v.v[j] = run; run += x[r][j]; }
                else           { run += x[r][j]; v.v[j] = run; }
            }
            *reinterpret_cast<Vec*>(out + warp_base + (u64)(r * 32 + lane) * VEC) = v;
        }
    } else {
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) {
            A run = wp + base[r];
#pragma unroll
            for (int j = 0; j < (int)VEC; ++j) {
                const u64 i = warp_base + (u64)(r * 32 + lane) * VEC + j;
                A y;
                if (exclusive) { y = run; run += x[r][j]; }
                else           { run += x[r][j]; y = run; }
                if (i < n) out[i] = y;
            }
        }
    }
    if (epoch_cell != nullptr) {
        // the last block to finish (every block has read the epoch) switches it for the next call
        __syncthreads();
        if (threadIdx.x == 0 && atomicAdd(epoch_cell + 1, 1u) == gridDim.x - 1) {
            epoch_cell[1] = 0u;
            epoch_cell[0] = 3u - epoch;
        }
    }
}
