"""Draft heads that ship with today's models, as drafting sources of the hybrid: MTP (`mtp.py`), EAGLE-3
(`eagle3.py`) and DFlash (`dflash.py`), on a common driver (`base.py`), built from a loaded pair by `build.py`.
Each is ported from llama.cpp's reference loop (vendor/llama.cpp/common/speculative.cpp), whose C++ API takes STL
types and so cannot be called from Python; runtime/heads.py holds the llama.cpp side (contexts, the target tap)."""
