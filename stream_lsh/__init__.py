"""stream-lsh: streaming near-duplicate filter for news pages."""
