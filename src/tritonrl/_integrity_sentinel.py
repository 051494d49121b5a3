INTACT = True
