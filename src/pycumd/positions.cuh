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
