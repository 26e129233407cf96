"""Textual widgets of the chat screen."""
