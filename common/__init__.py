"""Helpers shared by several lesson scripts: argument types, figure saving, reporting.

The lessons themselves (attention, masks, counts, ...) live in the scripts, not here.
"""
