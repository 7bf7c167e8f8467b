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

// ---------------------------------------------------------------------------------------------------
// The build on the device (pycumd/parallel/device_build.py): fixed-capacity arrays whose live row counts
// stay in device memory, so that a build's migration, ghost selection and cell sort run as a short
// sequence of launches and NCCL groups with one host synchronisation at the end.
//
// Index spaces.  The owned space is the rows [0, capacity) of the owned columns: the atoms owned before
// the build at [0, n_old), the arrivals after them (*n_rows counts both), a row leaving cleared in
// `alive`.  The combined space adds the ghost rows received so far after it: row j >= capacity is
// ghost j - capacity.
//
// Messages.  A face's message is MESSAGE_HEADER words (word 0: the rows it holds) followed by rows of
// `row_words` 32-bit words, each row the columns side by side; a whole buffer of fixed capacity is
// sent, the receiver reads the count from the header.

#include "neighbors/binning.cuh"

#define MESSAGE_HEADER 4

// One column of a packed row: an array with `words` 32-bit words per row, held at `owned` for rows of
// the owned space and at `ghost` for ghost rows (null where the space has none).
struct RowColumn {
    unsigned long long owned;
    unsigned long long ghost;
    int words;
    int pad;
};

// Migration along `dim`: for each live owned row (i < *n_rows, alive[i]) its domain along dim,
// c = clamp(floor(x * scale), 0, p - 1) in float64 (as migration_flags); a row with c != own leaves
// for the low face neighbour (flags[i] = 1) or the high one (flags[capacity + i] = 1; low first, so
// that two domains send everything once) and is no longer alive; a row bound for neither raises
// *strayed.  flags has 2 * capacity + 1 entries (the last 0: the exclusive scan's total).
extern "C" __global__ void select_migrating(const real_t* __restrict__ pos, int width, const int* __restrict__ n_rows,
                                            int capacity, int dim, double scale, int p, int own, int low, int high,
                                            unsigned char* __restrict__ alive, int* __restrict__ flags,
                                            int* __restrict__ strayed)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) flags[2 * capacity] = 0;
    if (i >= capacity) return;
    int to_low = 0, to_high = 0;
    if (i < *n_rows && alive[i]) {
        long long c = (long long)floor((double)pos[(long long)i * width + dim] * scale);
        c = c < 0 ? 0 : (c > p - 1 ? p - 1 : c);
        if (c != own) {
            to_low = c == low;
            to_high = c == high && !to_low;
            if (!to_low && !to_high) atomicExch(strayed, 1);
            alive[i] = 0;
        }
    }
    flags[i] = to_low;
    flags[capacity + i] = to_high;
}

// Ghost selection along `dim` over the combined space (space = capacity + ghost rows so far): a live
// owned row (i < *n_rows, alive[i]) or a ghost row (i - capacity < *n_ghost) goes to the low face
// neighbour when its image coordinate x < low_edge (flags[i]) and to the high one when x >= high_edge
// (flags[space + i]), both compared in float64.  Owned rows' images are their positions, ghosts'
// their images next to this domain.  flags has 2 * space + 1 entries.
extern "C" __global__ void select_ghosts(const real_t* __restrict__ pos, const real_t* __restrict__ ghost_image,
                                         int width, const int* __restrict__ n_rows,
                                         const unsigned char* __restrict__ alive, const int* __restrict__ n_ghost,
                                         int capacity, int space, int dim, double low_edge, double high_edge,
                                         int* __restrict__ flags)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) flags[2 * space] = 0;
    if (i >= space) return;
    int to_low = 0, to_high = 0;
    const real_t* row = nullptr;
    if (i < capacity) {
        if (i < *n_rows && alive[i]) row = pos + (long long)i * width;
    } else if (i - capacity < *n_ghost) {
        row = ghost_image + (long long)(i - capacity) * width;
    }
    if (row != nullptr) {
        const double x = (double)row[dim];
        to_low = x < low_edge;
        to_high = x >= high_edge;
    }
    flags[i] = to_low;
    flags[space + i] = to_high;
}

// Pack the flagged rows of both faces: row i of the space flagged for face k (flags[k * space + i],
// `offset` their exclusive scan) takes slot offset[k * space + i] - offset[k * space] of face k's
// message in `send` (faces `face_words` words apart), its columns side by side; with `send_list` the
// row's index is recorded there too (face k's list at k * send_capacity).  Thread 0 writes each face's
// count into its header and `sent` (2 ints); a face of more than send_capacity rows raises *overflow
// (bit 1) and packs only what fits.
extern "C" __global__ void pack_selected(const int* __restrict__ flags, const int* __restrict__ offset, int space,
                                         int capacity, const RowColumn* __restrict__ columns, int n_columns,
                                         int row_words, unsigned int* __restrict__ send, long long face_words,
                                         int send_capacity, int* __restrict__ send_list, int* __restrict__ sent,
                                         int* __restrict__ overflow)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        for (int k = 0; k < 2; ++k) {
            const int count = offset[(k + 1) * space] - offset[k * space];
            send[k * face_words] = (unsigned int)(count < send_capacity ? count : send_capacity);
            sent[k] = count;
            if (count > send_capacity) atomicOr(overflow, 1);
        }
    }
    if (i >= space) return;
    for (int k = 0; k < 2; ++k) {
        if (!flags[k * space + i]) continue;
        const int slot = offset[k * space + i] - offset[k * space];
        if (slot >= send_capacity) continue;
        if (send_list != nullptr) send_list[k * send_capacity + slot] = i;
        unsigned int* out = send + k * face_words + MESSAGE_HEADER + (long long)slot * row_words;
        for (int c = 0; c < n_columns; ++c) {
            const RowColumn col = columns[c];
            const unsigned int* src = i < capacity
                ? reinterpret_cast<const unsigned int*>(col.owned) + (long long)i * col.words
                : reinterpret_cast<const unsigned int*>(col.ghost) + (long long)(i - capacity) * col.words;
            for (int w = 0; w < col.words; ++w) out[w] = src[w];
            out += col.words;
        }
    }
}

// Unpack both faces' received messages after the rows already there: face 0's rows at *n_dst, face 1's
// after them (destination columns: `owned`, with `words` each), one thread per received row slot.
// The first column's coordinate `dim` (a row of `width` real_t) is shifted by shift0 / shift1 (a
// ghost's image next to this domain across the periodic boundary; 0: none).  With `alive` the new rows
// are marked alive.  When the rows would pass dst_capacity, nothing is written and *overflow gets bit 2.
extern "C" __global__ void unpack_received(const unsigned int* __restrict__ recv, long long face_words,
                                           int recv_capacity, const RowColumn* __restrict__ columns, int n_columns,
                                           int row_words, const int* __restrict__ n_dst, int dst_capacity,
                                           unsigned char* __restrict__ alive, int width, int dim, real_t shift0,
                                           real_t shift1, int* __restrict__ overflow)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 2 * recv_capacity) return;
    const int k = t / recv_capacity, slot = t % recv_capacity;
    const int count0 = (int)recv[0], count1 = (int)recv[face_words];
    if (*n_dst + count0 + count1 > dst_capacity) {
        if (t == 0) atomicOr(overflow, 2);
        return;
    }
    if (slot >= (k == 0 ? count0 : count1)) return;
    const long long row = *n_dst + (k == 0 ? 0 : count0) + slot;
    const unsigned int* in = recv + k * face_words + MESSAGE_HEADER + (long long)slot * row_words;
    for (int c = 0; c < n_columns; ++c) {
        const RowColumn col = columns[c];
        unsigned int* out = reinterpret_cast<unsigned int*>(col.owned) + row * col.words;
        for (int w = 0; w < col.words; ++w) out[w] = in[w];
        in += col.words;
    }
    const real_t shift = k == 0 ? shift0 : shift1;
    if (shift != (real_t)0) reinterpret_cast<real_t*>(columns[0].owned)[row * width + dim] += shift;
    if (alive != nullptr) alive[row] = 1;
}

// After unpack_received (one thread): the received counts into `received` (2 ints) and, unless the
// unpack overflowed, *n_dst grown by them; with `departed` (migration) the rows this rank sent
// (sent[0] + sent[1]) added to it.
extern "C" __global__ void commit_received(const unsigned int* __restrict__ recv, long long face_words,
                                           int* __restrict__ n_dst, int dst_capacity, int* __restrict__ received,
                                           const int* __restrict__ sent, int* __restrict__ departed)
{
    const int count0 = (int)recv[0], count1 = (int)recv[face_words];
    received[0] = count0;
    received[1] = count1;
    if (*n_dst + count0 + count1 <= dst_capacity) *n_dst += count0 + count1;
    if (departed != nullptr) *departed += sent[0] + sent[1];
}

// The start of a build: counts zeroed but n_rows = *n_owned (the rows the State holds), and the
// owned rows [0, *n_owned) alive.  One thread per owned row of the capacity.
extern "C" __global__ void begin_build(int* __restrict__ counts, int n_counts, int n_rows_index,
                                       int min_r2_index, const int* __restrict__ n_owned,
                                       unsigned char* __restrict__ alive, int capacity)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int n = *n_owned;
    if (i < n_counts) counts[i] = i == n_rows_index ? n : (i == min_r2_index ? 0x7F7FFFFF : 0);
    if (i < capacity) alive[i] = i < n;
}

// Cell keys of the combined space for the one counting sort of the build: a live row's image (owned:
// its position; ghost: its image) less the frame's origin, in real_t, into `shifted` (rows of 4: x, y,
// z and the row's w) and binned by binning.cuh's cell_key in the frame's extent (as cell_index); a dead
// row (departed, past the counts) into one of `dead_bins` bins after the n_bins cells.
extern "C" __global__ void extended_keys(const real_t* __restrict__ pos, const real_t* __restrict__ ghost_image,
                                         const int* __restrict__ n_rows, const unsigned char* __restrict__ alive,
                                         const int* __restrict__ n_ghost, int capacity, int space,
                                         real_t ox, real_t oy, real_t oz, real_t lx, real_t ly, real_t lz,
                                         int nx, int ny, int nz, int dead_bins, real_t* __restrict__ shifted,
                                         int* __restrict__ keys)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= space) return;
    const real_t* row = nullptr;
    if (j < capacity) {
        if (j < *n_rows && alive[j]) row = pos + (long long)j * 4;
    } else if (j - capacity < *n_ghost) {
        row = ghost_image + (long long)(j - capacity) * 4;
    }
    if (row == nullptr) {
        keys[j] = nx * ny * nz + j % dead_bins;
        return;
    }
    const real_t x = row[0] - ox, y = row[1] - oy, z = row[2] - oz;
    real_t* out = shifted + (long long)j * 4;
    out[0] = x;
    out[1] = y;
    out[2] = z;
    out[3] = row[3];
    keys[j] = cell_key(x, y, z, lx, ly, lz, nx, ny, nz);
}

// The owned rows among the sorted slots: flags[s] = 1 for a live slot (s < the live rows: *n_rows -
// *n_departed + *n_ghost) holding an owned row (order[s] < capacity); flags[space] = 0.
extern "C" __global__ void owned_slots(const int* __restrict__ order, int space, int capacity,
                                       const int* __restrict__ n_rows, const int* __restrict__ n_departed,
                                       const int* __restrict__ n_ghost, int* __restrict__ flags)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s == 0) flags[space] = 0;
    if (s >= space) return;
    const int live = *n_rows - *n_departed + *n_ghost;
    flags[s] = s < live && order[s] < capacity;
}

// The new numbering: the owned rows in slot order (rank = owned_slots' exclusive scan), the ghosts
// after them in their received order.  new_index[j] of each live row j of the combined space,
// owned_order[r] = the owned row renumbered r, *n_new the owned rows that stay, *n_live the live rows.
extern "C" __global__ void renumber(const int* __restrict__ order, const int* __restrict__ rank, int space,
                                    int capacity, const int* __restrict__ n_rows, const int* __restrict__ n_departed,
                                    const int* __restrict__ n_ghost, int* __restrict__ new_index,
                                    int* __restrict__ owned_order, int* __restrict__ n_new, int* __restrict__ n_live)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    const int live = *n_rows - *n_departed + *n_ghost;
    if (s == 0) {
        *n_new = rank[space];
        *n_live = live;
    }
    if (s >= space) return;
    if (s >= live) return;
    const int j = order[s];
    if (j < capacity) {
        const int r = rank[s];
        new_index[j] = r;
        owned_order[r] = j;
    } else {
        new_index[j] = rank[space] + (j - capacity);
    }
}

// The owned columns in the new order: dst[r] = src[owned_order[r]] for r < *n_new (column c: `owned`
// the source, `ghost` the destination), and the ghost rows after them where a column has ghost rows
// to place (ghost_src[c], not null: dst[*n_new + g] = ghost_src[g], g < *n_ghost).  One thread per
// (row, word) of the widest column over rows < rows_capacity.
extern "C" __global__ void permute_rows(const int* __restrict__ owned_order, const int* __restrict__ n_new,
                                        const int* __restrict__ n_ghost, const RowColumn* __restrict__ columns,
                                        const unsigned long long* __restrict__ ghost_src, int n_columns,
                                        int max_words, long long rows_capacity)
{
    const long long total = rows_capacity * max_words;
    const int owned = *n_new, ghosts = *n_ghost;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const long long r = t / max_words;
        const int w = (int)(t % max_words);
        if (r >= owned + ghosts) continue;
        for (int c = 0; c < n_columns; ++c) {
            const RowColumn col = columns[c];
            if (w >= col.words) continue;
            unsigned int* dst = reinterpret_cast<unsigned int*>(col.ghost);
            if (r < owned) {
                const unsigned int* src = reinterpret_cast<const unsigned int*>(col.owned);
                dst[r * col.words + w] = src[(long long)owned_order[r] * col.words + w];
            } else if (ghost_src[c] != 0ull) {
                const unsigned int* src = reinterpret_cast<const unsigned int*>(ghost_src[c]);
                dst[r * col.words + w] = src[(r - owned) * col.words + w];
            }
        }
    }
}

// The send lists (n_lists lists of list_capacity entries, list l holding counts[(l / 2) * count_stride
// + l % 2] rows of the combined space: per direction the two faces' counts) in the new numbering.
extern "C" __global__ void rename_send_lists(int* __restrict__ lists, int list_capacity, int n_lists,
                                             const int* __restrict__ counts, int count_stride,
                                             const int* __restrict__ new_index)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)n_lists * list_capacity) return;
    const int l = (int)(t / list_capacity), s = (int)(t % list_capacity);
    if (s < counts[(l / 2) * count_stride + l % 2]) lists[t] = new_index[lists[t]];
}
