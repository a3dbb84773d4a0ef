"""Source adapters, the canonical object model and the common URDF convention."""
