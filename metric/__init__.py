"""The ArticulateArena metric: pure, vectorized, arrays in and arrays out."""
