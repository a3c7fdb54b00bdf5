"""Renderers: console tables, JSON, plots. They format; they do no maths."""
