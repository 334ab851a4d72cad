"""Is this run in a notebook kernel (JupyterLab, Notebook 7, VS Code, Colab), and what it shows
inline there. A leaf: it imports nothing of the lessons' own (IPython only where it runs)."""
import sys


def kernel():
    """The IPython kernel's shell this runs in, or None (a terminal, a script, a plain IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if getattr(shell, "kernel", None) is not None else None


def display(*objects, **options):
    from IPython.display import display as show

    return show(*objects, **options)


def png_image(png):
    from IPython.display import Image

    return Image(data=png, format="png")


def show_png(png):
    """A figure's PNG bytes, inline."""
    display(png_image(png))
