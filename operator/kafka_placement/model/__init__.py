"""Typed, frozen contracts shared by every layer: cluster snapshot, intents, plan, errors.

This package imports nothing else of ours and no I/O framework (docs/architecture.md, section 2).
"""
