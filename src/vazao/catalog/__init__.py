"""Catalogs: frozen types loaded from data files under catalog/data/, every figure with source and as_of."""
