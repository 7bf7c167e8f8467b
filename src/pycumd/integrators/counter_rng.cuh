// Counter-based uniform random numbers: u = splitmix64-style hash of (seed, step, id, component)
// mapped to [0, 1) with 53 random bits.  Mirrored exactly by pycumd.integrators.langevin.counter_uniform.
#pragma once

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ double counter_uniform(unsigned long long seed, unsigned long long step,
                                                  unsigned long long id, unsigned long long component) {
    unsigned long long h = mix64(seed + 0x9E3779B97F4A7C15ULL);
    h = mix64(h ^ (step + 0x9E3779B97F4A7C15ULL));
    h = mix64(h ^ (id * 4ULL + component));
    return (double)(h >> 11) * 0x1.0p-53;
}
