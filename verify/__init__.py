"""Checks that decide whether a normalized object may enter the suite, and `arena validate`."""
