"""torch building blocks that several lessons use, each taught once in a lesson of its own:

    causal_mask     Week 2, section 2, taught in week2/01_causal_mask.py
    sinusoidal_pe   Week 2, section 5, taught in week2/03_sinusoidal_pe.py
    adam_step       the optimiser of every training lesson (torch.optim.Adam's rule)

tests/test_common.py holds each to the lesson that teaches it, and adam_step to torch.
"""
import math

import torch


def causal_mask(T, dtype=torch.float32):
    """[T, T]: -inf above the diagonal (key j lies in query i's future), 0 elsewhere. Added
    to the scores before the softmax, a future word gets weight exactly 0."""
    return torch.triu(torch.full((T, T), -math.inf, dtype=dtype), diagonal=1)


def sinusoidal_pe(max_len, d, dtype=torch.float32):
    """[max_len, d]: PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i), w_i = 10000^(-2i/d),
    computed in float64 and then given `dtype`."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]  # [max_len, 1]
    i = torch.arange(d // 2, dtype=torch.float64)[None, :]  # [1, d/2]: the pair index
    omega = 10000.0 ** (-2 * i / d)  # [1, d/2]: one speed per pair
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(p * omega)  # even coordinates 2i
    pe[:, 1::2] = torch.cos(p * omega)  # odd coordinates 2i + 1
    return pe.to(dtype)


def adam_state(weights):
    """Adam's running means m (of g) and v (of g^2), one zero tensor per weight tensor."""
    return {"m": [torch.zeros_like(w) for w in weights], "v": [torch.zeros_like(w) for w in weights]}


def adam_step(weights, grads, state, step, lr, betas=(0.9, 0.999), eps=1e-8):
    """One Adam update, in torch.optim.Adam's own arithmetic (written out: building
    torch.optim.Adam imports torch._dynamo, about a second on a small CPU). step counts
    from 1; m and v start at 0, so early on they are too small by 1 - b^step, undone here.
    A weight whose gradient is None stays put."""
    b1, b2 = betas
    for w, g, m, v in zip(weights, grads, state["m"], state["v"], strict=True):
        if g is None:
            continue
        m.lerp_(g, 1 - b1)  # m = b1 m + (1 - b1) g, written m + (1 - b1)(g - m), as torch does
        v.mul_(b2).addcmul_(g, g, value=1 - b2)  # v = b2 v + (1 - b2) g^2
        denominator = (v.sqrt() / (1 - b2 ** step) ** 0.5).add_(eps)  # sqrt(v_hat) + eps
        w.addcdiv_(m, denominator, value=-lr / (1 - b1 ** step))  # w -= lr m_hat / (...)
