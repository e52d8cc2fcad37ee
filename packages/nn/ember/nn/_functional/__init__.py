"""The implementation of ``ember.nn.functional``, one module per family of functions.

Import from ``ember.nn.functional``: these modules are private, and they never import it (the
layout is in ``ember/nn/functional.py``'s docstring).
"""
