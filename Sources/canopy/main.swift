// canopy -- the command-line entry point.
print("canopy: not yet implemented")
