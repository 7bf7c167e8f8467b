// Loading particle positions stored as (N, 4) rows: x, y, z, type.  16-byte (float) or
// 2 x 16-byte (double) read-only loads.
#pragma once

__device__ __forceinline__ void load_position(const float* pos4, int i, float& x, float& y, float& z, int& t) {
    float4 p = __ldg(reinterpret_cast<const float4*>(pos4) + i);
    x = p.x; y = p.y; z = p.z; t = (int)p.w;
}

__device__ __forceinline__ void load_position(const double* pos4, int i, double& x, double& y, double& z, int& t) {
    const double2* p = reinterpret_cast<const double2*>(pos4) + 2 * (size_t)i;
    double2 a = __ldg(p), b = __ldg(p + 1);
    x = a.x; y = a.y; z = b.x; t = (int)b.y;
}

// A whole (x, y, z, type) row of a position array the kernel also writes (so not through the
// read-only path), and its store: one 16-byte access (float) or two (double).
__device__ __forceinline__ void load_row4(const float* pos4, int i, float (&r)[4]) {
    const float4 p = reinterpret_cast<const float4*>(pos4)[i];
    r[0] = p.x; r[1] = p.y; r[2] = p.z; r[3] = p.w;
}

__device__ __forceinline__ void load_row4(const double* pos4, int i, double (&r)[4]) {
    const double2* p = reinterpret_cast<const double2*>(pos4) + 2 * (size_t)i;
    const double2 a = p[0], b = p[1];
    r[0] = a.x; r[1] = a.y; r[2] = b.x; r[3] = b.y;
}

__device__ __forceinline__ void store_row4(float* pos4, int i, const float (&r)[4]) {
    reinterpret_cast<float4*>(pos4)[i] = make_float4(r[0], r[1], r[2], r[3]);
}

__device__ __forceinline__ void store_row4(double* pos4, int i, const double (&r)[4]) {
    double2* p = reinterpret_cast<double2*>(pos4) + 2 * (size_t)i;
    p[0] = make_double2(r[0], r[1]);
    p[1] = make_double2(r[2], r[3]);
}

// Rows that carry an atom index in the bits of w (the list kernel's sorted rows, verlet.cu's
// ROWS_INDEX_IN_W): the position and the raw bits of w (the low 32 bits of a double's).
__device__ __forceinline__ void load_position_bits(const float* pos4, int i, float& x, float& y, float& z,
                                                   unsigned int& w) {
    float4 p = __ldg(reinterpret_cast<const float4*>(pos4) + i);
    x = p.x; y = p.y; z = p.z; w = __float_as_uint(p.w);
}

__device__ __forceinline__ void load_position_bits(const double* pos4, int i, double& x, double& y, double& z,
                                                   unsigned int& w) {
    const double2* p = reinterpret_cast<const double2*>(pos4) + 2 * (size_t)i;
    double2 a = __ldg(p), b = __ldg(p + 1);
    x = a.x; y = a.y; z = b.x; w = (unsigned int)__double_as_longlong(b.y);
}

// The w of a row that carries the atom index `w` in its bits (the inverse of load_position_bits).
__device__ __forceinline__ void set_index_w(float& w_out, unsigned int w) { w_out = __uint_as_float(w); }
__device__ __forceinline__ void set_index_w(double& w_out, unsigned int w) { w_out = __longlong_as_double((long long)w); }
