"""localspec: speculative decoding for local tool-using assistants over llama.cpp."""

__version__ = "0.1.0"
