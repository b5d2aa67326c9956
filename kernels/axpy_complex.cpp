// Complex axpy, y[i] = a * x[i] + y[i] for i < n, in single (c64) and double
// (c128) precision. A complex number is two parts, real first (C's
// float _Complex, numpy complex64/complex128); the scalar `a` is passed by
// value with the part's alignment.
#include "lrrt_kernel.h"

struct AxpyComplex64 {
  float re, im;
};
struct AxpyComplex128 {
  double re, im;
};

// y[i] += a * x[i] for one element, in either precision.
template <class Complex>
LRRT_DEVICE_FN void axpy_complex_element(Complex a, const Complex* x, Complex* y, uint32_t i) {
  const Complex xi = x[i];
  Complex yi = y[i];
  yi.re += a.re * xi.re - a.im * xi.im;
  yi.im += a.re * xi.im + a.im * xi.re;
  y[i] = yi;
}

LRRT_KERNEL(axpy_c64, (AxpyComplex64, a), (const AxpyComplex64*, x), (AxpyComplex64*, y), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) axpy_complex_element(a, x, y, i);
  }
}

LRRT_KERNEL(axpy_c128, (AxpyComplex128, a), (const AxpyComplex128*, x), (AxpyComplex128*, y), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) axpy_complex_element(a, x, y, i);
  }
}
