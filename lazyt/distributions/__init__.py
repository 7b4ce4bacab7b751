"""`lazyt.distributions`: torch.distributions' core, on lazyt tensors (lazy, differentiable,
on every device): the `Distribution` base class, families, `Independent`,
`TransformedDistribution` with its transforms, constraints, and `kl_divergence`."""
from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform,
                         TanhTransform, Transform)
from .uniform import Uniform

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
           "Gamma", "Geometric", "Independent", "Laplace", "LogNormal", "MultivariateNormal",
           "Normal", "OneHotCategorical", "Poisson", "SigmoidTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "constraints",
           "kl_divergence", "register_kl", "transforms"]
