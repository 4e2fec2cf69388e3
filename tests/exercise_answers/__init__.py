"""Typical wrong answers to the exercises: each check must fail them with the right diagnosis."""
