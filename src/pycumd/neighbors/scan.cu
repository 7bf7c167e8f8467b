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
// Single-pass scan with decoupled look-back on a persistent grid.
//
// Tile = LB_THREADS threads x LB_ROUNDS 16-byte vectors.  Each warp owns a contiguous
// segment of 32 * LB_ROUNDS vectors; in round r lane l holds vector (r*32 + l) of its
// warp's segment, so every load and store instruction of a warp covers 512 contiguous bytes.
//
// The grid is persistent: G blocks, all resident at once (the launch is cooperative, which
// guarantees it), block b scans tiles b, b + G, b + 2G, ... in that order, so tiles are
// scanned in generations of G consecutive tiles.  A block keeps its next tiles in a ring of
// LB_STAGES shared-memory buffers: while it scans one tile and looks back for its prefix,
// the loads of its next LB_STAGES-1 tiles are in flight (cp.async, each thread copying the
// vectors it will read itself, so no barrier guards the data).  A tile waits only on tiles
// with a smaller index, all owned by resident blocks that scan their tiles in order, so the
// kernel cannot deadlock.
//
// Per tile, with S = LB_STAGES:
//   wait for this thread's copies of the tile -> thread sums, warp scans -> barrier A ->
//   warp 0: block aggregate, publish, look back, publish inclusive prefix -> barrier B ->
//   outputs from the staged copy, stores -> start the copies of the tile S generations on.
// The look-back polls 32 * LB_LOOK predecessors at once (LB_LOOK words a lane), so a tile at
// position b of its generation finds the previous generation's inclusive prefixes in one
// round when 32 * LB_LOOK >= G.
//
// Tile status: flag = (epoch << 2) | state, state 1 = aggregate of tile t published,
// state 2 = inclusive prefix (all tiles <= t) published.  32-bit elements pack flag and value
// into one 64-bit word; 64-bit elements keep values in agg[t] / incl[t].  A flag written
// by an earlier call carries an older epoch and reads as "not yet" (state 0), so the status
// array needs no clearing between calls.  Values are published before their flag with
// release semantics and read after the flag with acquire semantics.

#define VEC (16 / sizeof(A))
#define LB_ITEMS (VEC * LB_ROUNDS)
#define LB_WARPS (LB_THREADS / 32)
#define LB_TILE (LB_THREADS * LB_ITEMS)
#define LB_STAGE_VECS (LB_THREADS * LB_ROUNDS)      // 16-byte vectors per stage buffer

#ifndef LB_STAGES
#define LB_STAGES 3
#endif
#ifndef LB_BACKOFF
#define LB_BACKOFF 0            // ns of __nanosleep between polls of a tile not yet published
#endif
#ifndef LB_LOOK
#define LB_LOOK 8               // status words a lane polls per look-back round
#endif
#ifndef LB_STORE_CS
#define LB_STORE_CS 0           // 1: streaming (evict-first) stores of the full tiles
#endif


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

// 16-byte global -> shared copy that completes asynchronously (sm_80+; a plain copy before).
__device__ __forceinline__ void copy16_async(Vec* dst, const Vec* src)
{
#if __CUDA_ARCH__ >= 800
    const unsigned int d = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void copy_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Wait until at most LB_STAGES-1 of this thread's copy groups are pending.
__device__ __forceinline__ void copy_wait_stage()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" :: "n"(LB_STAGES - 1) : "memory");
#endif
}
__device__ __forceinline__ void copy_wait_all()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

__device__ __forceinline__ void store_vec(Vec* p, const Vec& v)
{
#if LB_STORE_CS
    const int4 w = *reinterpret_cast<const int4*>(&v);
    __stcs(reinterpret_cast<int4*>(p), w);
#else
    *p = v;
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

// Start the copies of tile t into stage buffer buf (this thread's vectors) if the tile is
// full and the arrays are 16-byte aligned; other tiles are loaded when they are scanned.
__device__ __forceinline__ void stage_tile(Vec* buf, const A* in, u64 n, u64 t,
                                           u64 n_tiles, int aligned, unsigned int slot0)
{
    if (aligned && t < n_tiles && (t + 1) * LB_TILE <= n) {
        const Vec* src = reinterpret_cast<const Vec*>(in + t * LB_TILE) + slot0;
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) copy16_async(buf + slot0 + r * 32, src + r * 32);
    }
    copy_commit();              // one group per stage, empty or not, so the counts stay in step
}

// Sum of the values of tiles (tile-1, tile-2, ...) back to and including the nearest tile
// with an inclusive prefix (all 32 lanes of warp 0 call it; every lane gets the sum).
__device__ __forceinline__ A look_back(const u64* tstat, const A* agg, const A* incl,
                                       long long tile, unsigned int epoch, unsigned int lane)
{
    A prefix = A(0);
    long long top = tile - 1;
    while (true) {
        unsigned int state[LB_LOOK];
        A v[LB_LOOK];
#pragma unroll
        for (int j = 0; j < LB_LOOK; ++j) {   // all polls in flight together
            const long long p = top - (long long)(j * 32 + lane);
            state[j] = 2u;                     // before tile 0: nothing to add
            v[j] = A(0);
            if (p >= 0) state[j] = poll(tstat, agg, incl, p, epoch, &v[j]);
        }
#pragma unroll
        for (int j = 0; j < LB_LOOK; ++j) {
            const long long p = top - (long long)(j * 32 + lane);
            while (state[j] == 0u) {
#if LB_BACKOFF > 0
                __nanosleep(LB_BACKOFF);
#endif
                state[j] = poll(tstat, agg, incl, p, epoch, &v[j]);
            }
        }
        // nearest inclusive prefix: smallest distance j*32 + lane with state 2
        int jj = -1;
        unsigned int kk = 0;
#pragma unroll
        for (int j = 0; j < LB_LOOK; ++j) {
            const unsigned int m = __ballot_sync(FULL_MASK, state[j] == 2u);
            if (jj < 0 && m) { jj = j; kk = __ffs(m) - 1; }
        }
        A part = A(0);
#pragma unroll
        for (int j = 0; j < LB_LOOK; ++j)
            if (jj < 0 || j < jj || (j == jj && lane <= kk)) part += v[j];
        prefix += warp_sum(part);
        if (jj >= 0) return prefix;
        top -= 32 * LB_LOOK;
    }
}

// Launch cooperatively, with at most as many blocks as fit on the device at once and
// dynamic shared memory LB_STAGES * LB_TILE * sizeof(A) bytes.
extern "C" __global__ void __launch_bounds__(LB_THREADS, LB_MIN_BLOCKS)
scan_lookback(const A* in, A* out, u64 n, u64* status, A* agg, A* incl,
              unsigned int epoch, int exclusive, int aligned)
{
    extern __shared__ __align__(16) unsigned char lb_smem[];
    Vec* const stages = reinterpret_cast<Vec*>(lb_smem);
    __shared__ A warp_prefix[LB_WARPS];

    const unsigned int lane = threadIdx.x & 31;
    const unsigned int warp = threadIdx.x >> 5;
    const unsigned int slot0 = warp * (32 * LB_ROUNDS) + lane;   // this thread's round-0 vector
    const u64 n_tiles = (n + LB_TILE - 1) / LB_TILE;
    const u64 G = gridDim.x;

#pragma unroll
    for (int s = 0; s < LB_STAGES; ++s)
        stage_tile(stages + s * LB_STAGE_VECS, in, n, blockIdx.x + s * G, n_tiles, aligned, slot0);

    unsigned int s = 0;                           // stage of this tile: k mod LB_STAGES
    for (u64 tile = blockIdx.x; tile < n_tiles; tile += G) {
        Vec* const buf = stages + s * LB_STAGE_VECS + slot0;
        const u64 tile_base = tile * LB_TILE;
        const u64 warp_base = tile_base + (u64)warp * (32 * LB_ITEMS);
        const bool full = aligned && (tile_base + LB_TILE <= n);

        copy_wait_stage();                        // this thread's copies of this tile are in
        if (!full) {                              // partial or unaligned: load it now
#pragma unroll
            for (int r = 0; r < LB_ROUNDS; ++r) {
                Vec v;
#pragma unroll
                for (int j = 0; j < (int)VEC; ++j) {
                    const u64 i = warp_base + (u64)(r * 32 + lane) * VEC + j;
                    v.v[j] = (i < n) ? in[i] : A(0);
                }
                buf[r * 32] = v;
            }
        }

        // Per round: thread sum of its vector, exclusive warp scan of those sums.
        A base[LB_ROUNDS];
        A carry = A(0);
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) {
            const Vec v = buf[r * 32];
            A sum = v.v[0];
#pragma unroll
            for (int j = 1; j < (int)VEC; ++j) sum += v.v[j];
            const A inc = warp_inclusive_scan(sum, lane);
            A exc = __shfl_up_sync(FULL_MASK, inc, 1);
            if (lane == 0) exc = A(0);
            base[r] = carry + exc;
            carry += __shfl_sync(FULL_MASK, inc, 31);
        }
        if (lane == 0) warp_prefix[warp] = carry;  // warp total for now
        __syncthreads();                          // A

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
                if (lane == 0) publish(status, agg, incl, (unsigned int)tile, (epoch << 2) | 1u, aggregate);
                prefix = look_back(status, agg, incl, (long long)tile, epoch, lane);
                if (lane == 0) publish(status, agg, incl, (unsigned int)tile, (epoch << 2) | 2u, prefix + aggregate);
            }
            if (lane < LB_WARPS) warp_prefix[lane] = prefix + wexc;
        }
        __syncthreads();                          // B

        const A wp = warp_prefix[warp];
#pragma unroll
        for (int r = 0; r < LB_ROUNDS; ++r) {
            const Vec x = buf[r * 32];
            Vec v;
            A run = wp + base[r];
#pragma unroll
            for (int j = 0; j < (int)VEC; ++j) {
                if (exclusive) { v.v[j] = run; run += x.v[j]; }
                else           { run += x.v[j]; v.v[j] = run; }
            }
            if (full) {
                store_vec(reinterpret_cast<Vec*>(out + warp_base + (u64)(r * 32 + lane) * VEC), v);
            } else {
#pragma unroll
                for (int j = 0; j < (int)VEC; ++j) {
                    const u64 i = warp_base + (u64)(r * 32 + lane) * VEC + j;
                    if (i < n) out[i] = v.v[j];
                }
            }
        }
        // This thread has read its vectors of the buffer for the last time: refill it.
        stage_tile(stages + s * LB_STAGE_VECS, in, n, tile + LB_STAGES * G, n_tiles, aligned, slot0);
        s = (s + 1 == LB_STAGES) ? 0u : s + 1;
    }
    copy_wait_all();
}
