"""Exact GELU in one compiled pass, for float32, when numba is installed (`pip install 'minibert[fast]'`).

The NumPy GELU (activations.py) is the reference: ~20 elementwise passes over the (B, T, F) block, since NumPy
has no erf. This file computes the same formula, Abramowitz & Stegun 7.1.26, element by element in one loop
that numba compiles to SIMD code: each element is read once and its two results written once.

    e     = exp(-x^2 / 2)
    t     = 1 / (1 + p |x| / sqrt(2))
    Phi   = 0.5 + sign(x) * (0.5 - 0.5 * (a1 t + ... + a5 t^5) * e)       the normal CDF, erf by A&S
    out   = x * Phi                                                      GELU(x)
    deriv = Phi + x * e / sqrt(2 pi)                                     GELU'(x), cached for the backward
                                                                         (deriv None: not computed)

One piece differs from the NumPy path: exp. A loop that calls the C library's exp element by element does not
vectorise, so `exp_nonpositive` builds it from operations the compiler does vectorise: exp(y) = 2^n exp(r)
with |r| <= ln2 / 2, exp(r) by its Taylor series up to r^7 (the first term left out, r^8 / 8! < 6e-9, is below
float32's rounding), and 2^n written directly into a float's exponent bits. The results agree with the NumPy
path to a few float32 roundings (tests/layers/test_gelu_numba.py).

Imported only by gelu_select.py, on the first float32 GELU (importing numba costs ~0.2 s and ~60 MB, its
compiler ~60 MB more); MINIBERT_NUMBA chooses (see gelu_select.numba_gelu_loop). Each process compiles the loop
once (~1 s). numba's on-disk cache (cache=True) is not used: it stores its index with pickle, and minibert
never unpickles a file.
"""

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from minibert.layers.gelu_constants import AS_A, AS_P, INV_SQRT_2PI, SQRT_HALF

F32 = np.float32
A5, A4, A3, A2, A1 = (F32(a) for a in AS_A)
P_SCALED = F32(AS_P * SQRT_HALF)  # p / sqrt(2): t = 1 / (1 + p |x| / sqrt(2))
INV_SQRT_2PI_F32 = F32(INV_SQRT_2PI)
LOG2E = F32(1.0 / math.log(2.0))
LN2_HI = F32(0.693359375)  # ln 2 = LN2_HI + LN2_LO; LN2_HI has 9 significant bits, so n * LN2_HI is exact
LN2_LO = F32(math.log(2.0) - 0.693359375)
C7, C6, C5, C4, C3, C2 = (F32(1.0 / math.factorial(k)) for k in range(7, 1, -1))  # Taylor: 1/7! .. 1/2!
HALF, ONE = F32(0.5), F32(1.0)
EXP_UNDERFLOW = F32(-87.0)  # exp(-87) ~ 1.6e-38, the edge of float32's normal range: below it, 0

_jit = numba.njit(nogil=True, error_model="numpy", boundscheck=False)  # nogil: batches run on threads (parallel.py)


@intrinsic
def _bits_as_float32(typingctx, bits):
    """Reinterpret an int32's 32 bits as a float32 (no conversion of the value)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))
    if not isinstance(bits, types.Integer) or bits.bitwidth != 32:
        return None  # no match: numba reports a typing error instead of reinterpreting other widths
    return types.float32(bits), codegen


@_jit
def exp_nonpositive(y):
    """exp(y) for float32 y <= 0, in operations that vectorise."""
    n = np.floor(y * LOG2E + HALF)  # y = n ln2 + r, |r| <= ln2 / 2
    r = (y - n * LN2_HI) - n * LN2_LO
    exp_r = ((((((C7 * r + C6) * r + C5) * r + C4) * r + C3) * r + C2) * r + ONE) * r + ONE
    n = max(n, F32(-126.0))  # keeps the exponent bits valid below -87 (the select returns 0 there, and NaN's
    # value, whatever it becomes, is dropped by the select too: y > -87 is False for NaN)
    two_n = _bits_as_float32(np.int32((np.int64(n) + 127) << 23))  # 2^n: the biased exponent, no mantissa
    return exp_r * two_n if y > EXP_UNDERFLOW else F32(0.0)


@_jit
def gelu_forward_loop(x, out, deriv):
    """out = GELU(x), deriv = GELU'(x); x, out, deriv: (N,) float32, contiguous. deriv None (no backward follows):
    out only; numba compiles that version apart, the `deriv is not None` test decided at compile time."""
    for i in range(x.shape[0]):
        v = x[i]
        e = exp_nonpositive(F32(-0.5) * v * v)  # exp(-x^2 / 2)
        t = ONE / (ONE + P_SCALED * abs(v))
        poly = ((((A5 * t + A4) * t + A3) * t + A2) * t + A1) * t  # Horner, as the NumPy path
        h = poly * e * F32(-0.5) + HALF  # Phi(|x|) - 0.5 = 0.5 erf(|x| / sqrt(2)) (>= 0 up to ~6e-8 near x = 0)
        cdf = math.copysign(h, v) + HALF  # Phi(x), since erf is odd
        out[i] = v * cdf
        if deriv is not None:
            deriv[i] = v * e * INV_SQRT_2PI_F32 + cdf
