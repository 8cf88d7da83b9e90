"""Theorems: one function per result, named constants in, Certificate out.

Modules by family: :mod:`girsanov` (004 §§4–5), :mod:`transfer` (004 §3),
:mod:`paper_constants` (004's printed constants, regression only).
"""
