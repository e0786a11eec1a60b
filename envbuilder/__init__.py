"""envbuilder: resolve, build and certify GPU training containers that work on your machine."""

__version__ = "0.1.0"
