"""The constants of the exact GELU, shared by the NumPy GELU (activations.py) and the compiled one (gelu_numba.py),
so that both compute the same formula from the same numbers."""

import math

SQRT_HALF = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

# Abramowitz & Stegun 7.1.26: erfc(z) ~= (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2), t = 1/(1 + p z), z >= 0
AS_P = 0.3275911
AS_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)  # a5 .. a1, for Horner's rule
