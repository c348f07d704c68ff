/* SPDX-License-Identifier: MIT */
/* prof_math: see prof_math.h. */
#include "prof_math.h"

#include <stdint.h>
#include <string.h>

#define LN2 0.69314718055994530942

static uint64_t bits_of(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof(b));
  return b;
}

static double double_of(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof(x));
  return x;
}

/* ln(x) = e ln 2 + 2 atanh((m - 1) / (m + 1)) with x = m 2^e, m in [0.707, 1.414). */
double prof_log(double x) {
  if (!(x > 0)) return -1e308;
  uint64_t b = bits_of(x);
  int e = (int)((b >> 52) & 0x7ff);
  if (e == 0) { /* subnormal: scale into the normal range first */
    return prof_log(x * 18014398509481984.0) - 54 * LN2;
  }
  e -= 1023;
  double m = double_of((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e++;
  }
  /* atanh(s) = s (1 + s^2/3 + s^4/5 + ... + s^20/21), by Horner's rule with the
   * reciprocals as constants: one division in all (the series' own eleven cost more
   * than the rest of a sampling interval's draw). */
  double s = (m - 1) / (m + 1), s2 = s * s, poly = 1.0 / 21; /* written out: no loop */
  poly = poly * s2 + 1.0 / 19;
  poly = poly * s2 + 1.0 / 17;
  poly = poly * s2 + 1.0 / 15;
  poly = poly * s2 + 1.0 / 13;
  poly = poly * s2 + 1.0 / 11;
  poly = poly * s2 + 1.0 / 9;
  poly = poly * s2 + 1.0 / 7;
  poly = poly * s2 + 1.0 / 5;
  poly = poly * s2 + 1.0 / 3;
  poly = poly * s2 + 1.0;
  return e * LN2 + 2 * s * poly;
}

/* e^x = 2^k e^r with |r| <= ln2 / 2, e^r by its Taylor series. */
double prof_exp(double x) {
  if (x < -745) return 0;
  if (x > 709) return 1e308;
  double kf = x / LN2;
  int k = (int)(kf < 0 ? kf - 0.5 : kf + 0.5);
  double r = x - k * LN2, term = 1, sum = 1;
  for (int n = 1; n <= 14; n++) {
    term *= r / n;
    sum += term;
  }
  /* 2^k may be subnormal for k < -1022: apply it in two steps. */
  if (k < -1000) {
    sum *= double_of((uint64_t)(1023 - 500) << 52);
    k += 500;
  }
  return sum * double_of((uint64_t)(k + 1023) << 52);
}

double prof_one_minus_exp_neg(double x) {
  if (x <= 0) return 0;
  if (x >= 0.25) return 1 - prof_exp(-x);
  /* x - x^2/2! + x^3/3! - ...: no cancellation for small x. */
  double term = x, sum = 0;
  for (int n = 1; n <= 16; n++) {
    sum += term;
    term *= -x / (n + 1);
  }
  return sum;
}
