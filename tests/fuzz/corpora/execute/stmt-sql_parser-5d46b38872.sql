CREATE SOURCE s (c %s NOT NULL, d %s NULL, e %s)
