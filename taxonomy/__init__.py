"""The category taxonomy and category assignment with evidence."""
