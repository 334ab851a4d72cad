"""Printing helpers: numbers in the fixed formats the pages use, and a question's answer."""
import math


def yes(flag):
    """A yes-or-no question's answer, as a lesson prints it: "yes" when `flag` holds."""
    return "yes" if flag else "no"


def vec(values, decimals=4, shown=None):
    """A row of numbers at fixed decimals, e.g. '[0.3100, 0.6900, 0.0000]'; a row longer than
    `shown` shows its first `shown` numbers and how many more there are."""
    if hasattr(values, "tolist"):  # numpy arrays and torch tensors
        values = values.tolist()
    more = f" ... {len(values) - shown} more" if shown is not None and len(values) > shown else ""
    return "[" + ", ".join(f"{v:.{decimals}f}" for v in values[:shown]) + more + "]"


def n_params(module):
    """Learnable numbers in a torch module; a tensor shared by two layers counts once."""
    return sum(p.numel() for p in module.parameters())


def readable(x, decimals=4):
    """A number in digits anyone can read: `decimals` places at ordinary sizes, whole numbers
    with thousands commas from 100,000 up (16,659,726, not 1.666e+07), and two significant
    digits for tiny ones (0.00000000000000099, not 9.9e-16). Beyond those, where the digits
    would be too many to count, powers of ten in words: 1.7 x 10^-25, 3.1 x 10^300."""
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) < 1e-20 or abs(x) >= 1e15):
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{mantissa} x 10^{int(exponent)}"
    if x != 0 and abs(x) < 10 ** -decimals:
        return f"{x:.{1 - math.floor(math.log10(abs(x)))}f}"
    return f"{x:,.0f}" if abs(x) >= 1e5 else f"{x:.{decimals}f}"
