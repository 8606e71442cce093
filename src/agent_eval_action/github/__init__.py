"""GitHub REST access: a thin client and the operations built on it."""
