"""The procedurally generated sample library behind `arena generate` (see samples/generate.py).

design: the format-neutral object description; kinds: the shapes; plan: which objects and quirks;
urdf, partnet, mjcf, sdf: the writers; truth: the ground-truth sidecar; objects: one plan to files.
"""
