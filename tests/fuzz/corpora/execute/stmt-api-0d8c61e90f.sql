CREATE SOURCE u (x BIGINT) WITH (buffer_size = 3)
