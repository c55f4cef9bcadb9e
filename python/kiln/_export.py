"""PLACEHOLDER (development scaffold, replaced before merge)."""

__all__ = []
