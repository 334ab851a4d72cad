"""Printing helpers: numbers in the fixed formats the pages use."""


def vec(values, decimals=4):
    """A row of numbers at fixed decimals, e.g. '[0.3100, 0.6900, 0.0000]'."""
    if hasattr(values, "tolist"):  # numpy arrays and torch tensors
        values = values.tolist()
    return "[" + ", ".join(f"{v:.{decimals}f}" for v in values) + "]"


def n_params(module):
    """Learnable numbers in a torch module; a tensor shared by two layers counts once."""
    return sum(p.numel() for p in module.parameters())
