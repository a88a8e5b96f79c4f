"""Data: built-in corpora and models shipped by pip packages, and dataset helpers."""
