"""localspec: speculative decoding for local tool-using assistants over llama.cpp."""

from localspec import native_first as _native_first

__version__ = "0.1.0"

# llama.cpp's libraries must be loaded before numpy's, or CUDA builds crash at model load (native_first.py).
_native_first.install()
