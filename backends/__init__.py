"""shapegrad's built-in backends, installed as the ``shapegrad_backends`` package.

Each is registered in ``pyproject.toml`` under the ``shapegrad.backends`` entry-point group,
the same way a third-party backend would be.
"""
