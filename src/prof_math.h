/* SPDX-License-Identifier: MIT */
/*
 * prof_math: the few real functions sampling needs, without libm (the library links
 * libc only). Accurate to about 1e-14 relative over the ranges used.
 */
#ifndef TESSERA_PROF_MATH_H
#define TESSERA_PROF_MATH_H

/* Natural logarithm of x > 0 (returns -1e308 for x <= 0). */
double prof_log(double x);
/* e^x; 0 below -745, a huge value above 709. */
double prof_exp(double x);
/* 1 - e^(-x) for x >= 0, accurate also for tiny x (no cancellation). */
double prof_one_minus_exp_neg(double x);

#endif
