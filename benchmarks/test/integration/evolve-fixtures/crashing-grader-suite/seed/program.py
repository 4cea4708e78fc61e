X = 0.5  # troupe:param float[0,1]
Y = 0.5  # troupe:param float[0,1]
print(X, Y)
