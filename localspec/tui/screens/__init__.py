"""Textual screens: chat, models, settings, and the approval modal."""
