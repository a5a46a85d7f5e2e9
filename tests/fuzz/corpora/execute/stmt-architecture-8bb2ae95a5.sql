WITH (buffer_size = n)
