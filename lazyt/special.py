"""`lazyt.special`: torch.special's names. The functions are lazyt's own (`lazyt/special_fns.py`
for the special functions themselves); this module only gathers them under torch's names,
so `import lazyt.special as S; S.erfcx(x)` reads as it does with torch."""
from __future__ import annotations

from .functional import log_softmax, softmax  # noqa: F401
from .mathops import exp2, round  # noqa: F401,A004
from .moreops import expm1, log1p, logit, xlogy  # noqa: F401
from .moreops2 import sinc  # noqa: F401
from .reductions import logsumexp  # noqa: F401
from .special_fns import (digamma, entr, erfc, erfcx, erfinv, i0, i0e, log_ndtr,  # noqa: F401
                          multigammaln, ndtr, ndtri, polygamma, psi, xlog1py)
from .special_fns import lgamma as gammaln  # noqa: F401
from .special_more import igamma as gammainc  # noqa: F401
from .special_more import igammac as gammaincc  # noqa: F401
from .functional import sigmoid as expit  # noqa: F401
from .functional import erf  # noqa: F401
from .special_bessel import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1,  # noqa: F401
                             i1, i1e, modified_bessel_i0, modified_bessel_i1,
                             modified_bessel_k0, modified_bessel_k1,
                             scaled_modified_bessel_k0, scaled_modified_bessel_k1,
                             spherical_bessel_j0, zeta)
from .special_poly import (chebyshev_polynomial_t, chebyshev_polynomial_u,  # noqa: F401
                           chebyshev_polynomial_v, chebyshev_polynomial_w, hermite_polynomial_h,
                           hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p,
                           shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
                           shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w)
from .special_poly import __all__ as _POLY

__all__ = ["erf", "erfc", "erfcx", "erfinv", "expit", "logit", "xlogy", "xlog1py", "gammaln",
           "digamma", "psi", "polygamma", "multigammaln", "i0", "i0e", "ndtr", "ndtri",
           "log_ndtr", "sinc", "entr", "expm1", "log1p", "exp2", "logsumexp", "softmax",
           "log_softmax", "round", "gammainc", "gammaincc", "airy_ai", "bessel_j0", "bessel_j1",
           "bessel_y0", "bessel_y1", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0", "zeta", *_POLY]
