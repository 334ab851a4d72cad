"""Small NumPy formulas that many lessons use as a building block."""
import numpy as np


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`. Subtracting the max first changes nothing
    mathematically and keeps exp from overflowing; a -inf score gets weight exactly 0."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
