"""`lazyt.models`: models whose parameter names match public checkpoints, loaded without torch."""
from .bert import (BertModel, SentenceEncoder, extended_attention_mask, l2_normalize,
                   mean_pooling, random_bert, scaled_dot_product_attention)

__all__ = ["BertModel", "SentenceEncoder", "mean_pooling", "l2_normalize",
           "extended_attention_mask", "scaled_dot_product_attention", "random_bert"]
