// The 32-bit fixed-point image of float64 positions (mixed precision's force kernel reads it; see
// forces.cu's fixed_point_image): coordinate x as the box fraction u = round(x 2^32 / L) mod 2^32.
#pragma once

__device__ __forceinline__ unsigned int box_fraction(double x, double scale) {
    return (unsigned int)(unsigned long long)__double2ll_rn(x * scale);   // mod 2^32
}
