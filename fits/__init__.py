"""The bundled fits: one `<gpu-slug>.json` per measured GPU, written by `python -m seer.fit`.

This folder is the top-level `fits/` of the repository and ships inside the package as
`seer.fits` (package data, read through importlib.resources), so an installed seer has them.
"""
