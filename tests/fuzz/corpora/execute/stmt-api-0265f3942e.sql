CREATE SOURCE u (x BIGINT) WITH (colour = 'red')
