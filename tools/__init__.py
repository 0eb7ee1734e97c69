"""Developer tools that are not tests: mutation testing (`make mutation`)."""
