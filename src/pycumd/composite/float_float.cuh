// Composite (float-float) arithmetic for CUDA device code.
//
// A composite number is an unevaluated sum of two float32 values, x = x.hi + x.lo, kept
// *normalised*: x.hi = RN(x.hi + x.lo), hence |x.lo| <= ulp(x.hi)/2 <= u |x.hi| with
// u = 2^-24 the unit roundoff of float32.  It carries about 48 significant bits (relative
// spacing ~ u^2 = 2^-48 ~ 3.6e-15) with the exponent range of float32.
//
// The operations are those of Saponaro (2010, ch. 5: add, subtract, multiply, divide) rebuilt
// on error-free transformations (Dekker 1971, Knuth TAOCP 2) with the renormalisation and the
// product error term that the thesis' versions leave out; the choice of algorithms and their
// bounds follow Joldes, Muller & Popescu, "Tight and rigorous error bounds for basic building
// blocks of double-word arithmetic", ACM TOMS 44(2), 2017 (below: JMP).  Every bound below is a
// relative error with respect to the exact result on the exact inputs (x.hi + x.lo, ...),
// assuming no overflow; for ff_mul, ff_mul_f and ff_div also no underflow (results and their
// low parts above 2^-126 in magnitude; below that an absolute error of a few 2^-150 adds on).
//
// Every rounding is an explicit IEEE round-to-nearest PTX instruction written as inline assembly
// (ieee_fadd, ieee_fmul, ieee_fmaf, ... below): the compiler can neither contract these into FMAs
// nor reorder them, and -- unlike the __fadd_rn/__fmul_rn/__fmaf_rn intrinsics, which become
// their .ftz forms under -ftz=true -- they keep subnormal numbers.  This matters because CuPy
// appends -ftz=true to every NVRTC compile (seen with CuPy 13.5 and 14.2): with the intrinsics,
// TwoProd loses its error term whenever that term is subnormal.  The results therefore do not
// depend on -ftz, --fmad, -use_fast_math or the optimisation level, and they are bit-identical
// to the CPU implementation in pycumd/composite/float_float.py, subnormals included.
//
// Include with  #include "composite/float_float.cuh"  (the package directory is on the path).
#pragma once

struct __align__(8) ff {
    float hi;  // leading part: RN(hi + lo) == hi
    float lo;  // trailing part, |lo| <= ulp(hi)/2
};

// ---- IEEE-754 binary32 operations, round to nearest even, subnormals kept (inline PTX) ----
__device__ __forceinline__ float ieee_fadd(float a, float b)
{
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
__device__ __forceinline__ float ieee_fsub(float a, float b)
{
    float r;
    asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
__device__ __forceinline__ float ieee_fmul(float a, float b)
{
    float r;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
// RN(a*b + c) with a single rounding.
__device__ __forceinline__ float ieee_fmaf(float a, float b, float c)
{
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
    return r;
}
__device__ __forceinline__ float ieee_fdiv(float a, float b)
{
    float r;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
__device__ __forceinline__ float ieee_fneg(float a)
{
    float r;
    asm("neg.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}
// RN32(d), subnormal results kept.
__device__ __forceinline__ float ieee_d2f(double d)
{
    float r;
    asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(d));
    return r;
}
// The double equal to a (exact, subnormal a included).
__device__ __forceinline__ double ieee_f2d(float a)
{
    double r;
    asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(a));
    return r;
}

// Build a composite number from its two parts (no normalisation).
__device__ __forceinline__ ff ff_make(float hi, float lo)
{
    ff r;
    r.hi = hi;
    r.lo = lo;
    return r;
}

// The composite number equal to a float: (a, 0).  Exact.
__device__ __forceinline__ ff ff_from_float(float a) { return ff_make(a, 0.0f); }

// -x.  Exact.
__device__ __forceinline__ ff ff_neg(ff x) { return ff_make(ieee_fneg(x.hi), ieee_fneg(x.lo)); }

// TwoSum (Knuth): s = RN(a + b), e = (a + b) - s exactly, for any finite a, b whose sum does
// not overflow (also with subnormals).  6 flops.
__device__ __forceinline__ ff two_sum(float a, float b)
{
    float s = ieee_fadd(a, b);
    float bb = ieee_fsub(s, a);
    float aa = ieee_fsub(s, bb);
    float e = ieee_fadd(ieee_fsub(a, aa), ieee_fsub(b, bb));
    return ff_make(s, e);
}

// Fast2Sum (Dekker): s = RN(a + b), e = (a + b) - s exactly, provided exponent(a) >= exponent(b)
// (e.g. |a| >= |b|) or a == 0.  3 flops.
__device__ __forceinline__ ff fast_two_sum(float a, float b)
{
    float s = ieee_fadd(a, b);
    float z = ieee_fsub(s, a);
    float e = ieee_fsub(b, z);
    return ff_make(s, e);
}

// TwoProd with FMA: p = RN(a * b), e = a*b - p exactly (one FMA computes RN(a*b - p), and the
// error of a product is a float), provided no overflow and exponent(a) + exponent(b) >= -126 + 23
// (no underflow in e).  2 flops.
__device__ __forceinline__ ff two_prod(float a, float b)
{
    float p = ieee_fmul(a, b);
    float e = ieee_fmaf(a, b, ieee_fneg(p));
    return ff_make(p, e);
}

// x + y, AccurateDWPlusDW (JMP Algorithm 6):
//   (sh, sl) = TwoSum(xh, yh); (th, tl) = TwoSum(xl, yl); c = RN(sl + th);
//   (vh, vl) = Fast2Sum(sh, c); w = RN(tl + vl); z = Fast2Sum(vh, w).
// |z - (x + y)| <= 3u^2/(1 - 4u) |x + y|  (proved in JMP), also under cancellation; exact
// zero when x == -y.  20 flops.  (The thesis' addition, Fig. 6, is the first TwoSum plus
// RN(sl + xl + yl) without renormalisation: its relative error is unbounded under cancellation.)
__device__ __forceinline__ ff ff_add(ff x, ff y)
{
    ff s = two_sum(x.hi, y.hi);
    ff t = two_sum(x.lo, y.lo);
    float c = ieee_fadd(s.lo, t.hi);
    ff v = fast_two_sum(s.hi, c);
    float w = ieee_fadd(t.lo, v.lo);
    return fast_two_sum(v.hi, w);
}

// x - y = x + (-y): same algorithm and bound as ff_add.
__device__ __forceinline__ ff ff_sub(ff x, ff y) { return ff_add(x, ff_neg(y)); }

// x + b for a float b, DWPlusFP (JMP Algorithm 4):
//   (sh, sl) = TwoSum(xh, b); v = RN(xl + sl); z = Fast2Sum(sh, v).
// |z - (x + b)| <= 2u^2 |x + b|  (proved in JMP).  10 flops.
__device__ __forceinline__ ff ff_add_f(ff x, float b)
{
    ff s = two_sum(x.hi, b);
    float v = ieee_fadd(x.lo, s.lo);
    return fast_two_sum(s.hi, v);
}

// x * y, DWTimesDW1 (JMP Algorithm 10; the thesis' Fig. 7 expansion x*y = xh*yh + xh*yl + xl*yh
// + xl*yl with the rounding error of xh*yh kept by TwoProd, xl*yl dropped, and a renormalisation):
//   (ch, cl1) = TwoProd(xh, yh); tl = RN(xh*yl); th = RN(xl*yh); cl2 = RN(th + tl);
//   cl3 = RN(cl1 + cl2); z = Fast2Sum(ch, cl3).
// |z - x*y| <= 8u^2 (1 + O(u)) |x*y| (derived in docs/precision.md; the literature proves 5u^2
// to 7u^2 for this algorithm).  The thesis' version, which drops cl1, errs by up to u |x*y|.
// 9 flops.
__device__ __forceinline__ ff ff_mul(ff x, ff y)
{
    ff c = two_prod(x.hi, y.hi);
    float tl = ieee_fmul(x.hi, y.lo);
    float th = ieee_fmul(x.lo, y.hi);
    float cl2 = ieee_fadd(th, tl);
    float cl3 = ieee_fadd(c.lo, cl2);
    return fast_two_sum(c.hi, cl3);
}

// x * b for a float b, DWTimesFP2 (JMP Algorithm 8):
//   (ch, cl1) = TwoProd(xh, b); cl2 = RN(xl*b); cl3 = RN(cl1 + cl2); z = Fast2Sum(ch, cl3).
// |z - x*b| <= 3u^2 (1 + O(u)) |x*b| (derived in docs/precision.md).  7 flops.
__device__ __forceinline__ ff ff_mul_f(ff x, float b)
{
    ff c = two_prod(x.hi, b);
    float cl2 = ieee_fmul(x.lo, b);
    float cl3 = ieee_fadd(c.lo, cl2);
    return fast_two_sum(c.hi, cl3);
}

// x / y by one correction step on the leading quotient (Karp & Markstein's scheme, as in the
// thesis' Fig. 8, with the remainder formed exactly by TwoProd):
//   q1 = RN(xh / yh); (ph, pl) = TwoProd(q1, yh);
//   r = RN(RN(RN(RN(xh - ph) - pl) + xl) - RN(q1*yl))     (xh - ph is exact, Sterbenz)
//   q2 = RN(r / yh); z = Fast2Sum(q1, q2).
// r approximates the remainder x - q1*y with absolute error <= 7u^2 |xh| and q2 the correction
// (x - q1*y)/y, giving |z - x/y| <= 13u^2 (1 + O(u)) |x/y| (derived in docs/precision.md).
// Division by zero gives nan (the correction multiplies inf by 0).  Two IEEE divisions, 10 other
// flops.
__device__ __forceinline__ ff ff_div(ff x, ff y)
{
    float q1 = ieee_fdiv(x.hi, y.hi);
    ff p = two_prod(q1, y.hi);
    float a = ieee_fsub(x.hi, p.hi);
    float b = ieee_fsub(a, p.lo);
    float c = ieee_fadd(b, x.lo);
    float d = ieee_fmul(q1, y.lo);
    float r = ieee_fsub(c, d);
    float q2 = ieee_fdiv(r, y.hi);
    return fast_two_sum(q1, q2);
}

// The composite number nearest a double: hi = RN32(d), lo = RN32(d - hi) (d - hi is exact in
// double).  |hi + lo - d| <= u^2 |d| (for |d| within the normal float32 range).
__device__ __forceinline__ ff ff_from_double(double d)
{
    float hi = ieee_d2f(d);
    float lo = ieee_d2f(__dsub_rn(d, ieee_f2d(hi)));
    return ff_make(hi, lo);
}

// The double nearest x.hi + x.lo (one rounding; exact when the two parts span <= 53 bits).
__device__ __forceinline__ double ff_to_double(ff x)
{
    return __dadd_rn(ieee_f2d(x.hi), ieee_f2d(x.lo));
}
