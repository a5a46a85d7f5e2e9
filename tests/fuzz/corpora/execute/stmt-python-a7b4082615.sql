insert(name, data)
