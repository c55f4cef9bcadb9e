"""The parts of kiln's Python API written in Python over kiln._core."""

__all__ = []
