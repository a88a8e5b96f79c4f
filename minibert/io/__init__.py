"""File input/output helpers shared by the whole package."""
