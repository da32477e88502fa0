"""Query understanding and score fusion for recall."""
