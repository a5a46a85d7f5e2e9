CREATE SOURCE s (t INT) WITH (a = -x)
