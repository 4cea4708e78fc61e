"""Toy search task for the evolve integration tests: prints its two parameters."""
X = 0.0  # troupe:param float[-5,5]
Y = 0.0  # troupe:param float[-5,5]

print(X, Y)
